"""中文: the messages every checker shares (transformer_course/exercises/__init__.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "{mark} {name}: {message}": "{mark} {name}：{message}",
    "not done yet: write your code (or answer) in place of `raise NotImplementedError` or `...`": (
        "还没有完成：把 `raise NotImplementedError` 或 `...` 换成你的代码（或答案）"
    ),
    "your code raised {error_type}: {error} (line {line})": "你的代码抛出了 {error_type}：{error}（第 {line} 行）",
    "passed": "通过",
    "not this one; read the question again": "不是这个；请再读一遍题目",
    "your result could not be checked: {error_type}: {error}; check its type, dtype and shape": (
        "无法核对你的结果：{error_type}：{error}；请核对它的类型、dtype 和形状"
    ),
    "{what} should be a torch.Tensor, got {type}": "{what} 应是 torch.Tensor，实际得到 {type}",
    "{what} has shape {got}, expected {expected}": "{what} 的形状是 {got}，应为 {expected}",
    "{what} should be a boolean tensor (True = may attend), got dtype {dtype}": (
        "{what} 应是布尔张量（True = 可以关注），实际 dtype 为 {dtype}"
    ),
    "{what} is inverted: True should mean 'may attend'": "{what} 的真假反了：True 应表示“可以关注”",
    "{what} differs at index {index}: got {got}, expected {expected}": (
        "{what} 在索引 {index} 处不对：得到 {got}，应为 {expected}"
    ),
    "{what} has the right shape but wrong values: at index {index} got {got:.4f}, expected {expected:.4f}": (
        "{what} 的形状对了，但其中的值不对：索引 {index} 处得到 {got:.4f}，应为 {expected:.4f}"
    ),
    "{what} should be a number, got the boolean {got}": "{what} 应是一个数，实际得到布尔值 {got}",
    "{what} should be a number, got a boolean {type}": "{what} 应是一个数，实际得到布尔类型的 {type}",
    "{what} should be one number, got {type} of shape {shape}": "{what} 应是一个数，实际得到形状为 {shape} 的 {type}",
    "{what} should be a number (int or float), got {type}: {got!r}": (
        "{what} 应是一个数（int 或 float），实际得到 {type}：{got!r}"
    ),
    "{what} should be a whole number, got {value}": "{what} 应是整数，实际得到 {value}",
    "{what} should be a tuple or a list, got {type}": "{what} 应是元组或列表，实际得到 {type}",
    "{what} should have {length} items, got {got}": "{what} 应有 {length} 项，实际有 {got} 项",
    "{what}, item {i}": "{what} 的第 {i} 项",
    "{what}: answer with one letter as a string, e.g. '{example}', got {type}": (
        "{what}：请用字符串写一个字母作答，例如 '{example}'，实际得到 {type}"
    ),
    "{what}: answer with one of the letters {letters}, got {got!r}": "{what}：请从字母 {letters} 中选一个作答，实际得到 {got!r}",
    "{what} is an additive mask (0 = allowed, −inf = blocked, as nn.Transformer's); return True (or 1) where the "
    "query may attend and False (or 0) where it may not": (
        "{what} 是加性掩码（0 = 允许，−inf = 屏蔽，nn.Transformer 的约定）；请在查询可以关注的位置返回 True（或 1），"
        "不可以关注的位置返回 False（或 0）"
    ),
    "{what} holds values other than 0 and 1: a mask is True/1 = may attend, False/0 = may not": (
        "{what} 含有 0 和 1 以外的值：掩码中 True/1 = 可以关注，False/0 = 不可以"
    ),
    "not this number; work it out again step by step": "不是这个数；请一步一步重新算一遍",
    "not done yet: replace the `...` with your answer": "还没有完成：把 `...` 换成你的答案",
    "answer": "答案",
    "{got:g}: {otherwise}": "{got:g}：{otherwise}",
    "right: {why}": "正确：{why}",
    "no question named {unknown}: the questions are {questions}": "没有名为 {unknown} 的题目：题目有 {questions}",
    "quiz": "小测验",
    "{right} of {total} right": "共 {total} 题，答对 {right} 题",
}
