"""中文: the messages of the graded hidden tests (course_tools/classroom/verdict.py, which registers them in
the fresh copy of the package it grades with)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "graded: {score} of {points} points": "批改结果：得 {score} 分（满分 {points} 分）",
    "{name} is not defined: run the cell that defines it, then this one": "{name} 还没有定义：先运行定义它的单元格，再运行这一个",
    "this cell's checks could not run: {error_type}: {error}": "这个单元格的核对无法运行：{error_type}：{error}",
}
