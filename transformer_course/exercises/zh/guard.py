"""中文: the messages of transformer_course/exercises/guard.py."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "your code calls {call}, the package's or PyTorch's own version of {what}, so this is not "
    "counted as yours: write {what} yourself with tensor operations": (
        "你的代码调用了 {call}，这是包或 PyTorch 自带的{what}实现，不算你自己写的：请用张量运算亲手写出{what}"
    ),
}
