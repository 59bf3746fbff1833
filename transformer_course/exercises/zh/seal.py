"""中文: the messages of sealed answers (transformer_course/exercises/seal.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "noted; whether it is right is checked when your work is graded": "已记下；答案对不对，批改作业时才核对",
}
