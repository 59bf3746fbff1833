"""中文: the checkers of notebook 01 (transformer_course/exercises/nb01_masks.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "{what} is inverted: True (or 1) should mean 'may attend'": "{what} 的真假反了：True（或 1）应表示“可以注意”",
    "{what} differs at index {index}: got {got}, expected {expected}": (
        "{what} 在索引 {index} 处不对：得到 {got}，应为 {expected}"
    ),
    "you ignored the padding: a key must also be a real token, so pads are never looked at": (
        "你忽略了填充：键还必须是真实的词元，所以填充位置永远不会被注意"
    ),
    "you ignored the causal rule: query i sees only keys 0…i": "你忽略了因果规则：查询 i 只能看到键 0…i",
    "you left out the pad queries: the target mask hides pad keys only, so a pad query still looks at the real "
    "tokens before it": "你漏掉了填充位置上的查询：目标掩码只遮住填充的键，所以填充位置的查询仍会看它前面的真实词元",
    "you hid the diagonal: query i may attend to itself (keys 0…i, i included)": (
        "你把对角线遮住了：查询 i 可以注意它自己（键 0…i，包括 i）"
    ),
    "your answer": "你的答案",
    "{got}: {hint}": "{got}：{hint}",
    "sentence {wrong} is not right: draw its 5 × 5 table, rows = queries, columns = keys": (
        "句子 {wrong} 不对：画出它的 5 × 5 表格，行 = 查询，列 = 键"
    ),
    "allowed pairs": "允许的（查询, 键）对",
    "passed: only real keys, only the past and the present": "通过：只有真实的键，只有过去和当前位置",
    "{what} has shape {shape}: add the head and query axes, (batch, 1, 1, max_len), so that it broadcasts over "
    "heads and queries": "{what} 的形状是 {shape}：加上头和查询两个轴，变成 (batch, 1, 1, max_len)，这样它才能在各个头和各个查询上广播",
    "{what} has shape {shape}: that masks queries; the padding mask is about keys, the last axis: "
    "(batch, 1, 1, max_len)": "{what} 的形状是 {shape}：这遮的是查询；填充掩码针对的是键，即最后一个轴：(batch, 1, 1, max_len)",
    "{what} lets one pad through: positions 0 … length − 1 are real (use <, not <=)": (
        "{what} 多放过了一个填充位置：真实的位置是 0 … length − 1（用 <，不要用 <=）"
    ),
    "mask from lengths": "由长度构造掩码",
    "passed: torch.arange(max_len) < lengths[:, None], as (B, 1, 1, L)": (
        "通过：torch.arange(max_len) < lengths[:, None]，形状为 (B, 1, 1, L)"
    ),
    "it sees only the past: a centred window reaches radius positions on both sides (|i − j| <= radius)": (
        "它只看过去：居中的窗口向两侧各延伸 radius 个位置（|i − j| <= radius）"
    ),
    "the window is one too narrow: |i − j| <= radius, so radius = 1 means 3 keys": (
        "窗口窄了一格：|i − j| <= radius，所以 radius = 1 对应 3 个键"
    ),
    "the window is one too wide: |i − j| <= radius, not radius + 1": (
        "窗口宽了一格：应是 |i − j| <= radius，而不是 radius + 1"
    ),
    "pads are looked at: combine the window with the padding mask of the keys (&)": (
        "填充位置被注意到了：把窗口和键的填充掩码组合起来（&）"
    ),
    "you also masked the pad queries: their rows are then empty, and an empty row gives NaN (section 6); mask "
    "keys only": "你把填充位置上的查询也遮住了：这些行就全空了，而全空的行会得到 NaN（第 6 节）；只遮键",
    "{what}: compare the tokens with pad_idx, not with 0": "{what}：应把词元和 pad_idx 比较，而不是和 0 比较",
    "{what}: {hint}": "{what}：{hint}",
    "window mask": "窗口掩码",
    "passed: a band of width 2·radius + 1 around each query, no pads": (
        "通过：每个查询周围宽 2·radius + 1 的一条带，不含填充"
    ),
    "{what} has shape {shape}: add the batch and head axes, (1, 1, size, size)": (
        "{what} 的形状是 {shape}：加上批次和头两个轴，变成 (1, 1, size, size)"
    ),
    "{what} lets each query see {seen} keys: with window={window} a query sees itself and the {before} keys before "
    "it": "{what} 让每个查询看到 {seen} 个键：window={window} 时，查询看到的是它自己和它前面的 {before} 个键",
    "{what} lets a query see keys after it: keep it causal (the lower triangle, torch.tril)": (
        "{what} 让查询看到了它后面的键：要保持因果性（下三角，torch.tril）"
    ),
    "{what} hides the diagonal: a position may attend to itself": "{what} 遮住了对角线：一个位置可以注意它自己",
    "local mask": "局部掩码",
    "passed: each position sees itself and the window − 1 positions before it": (
        "通过：每个位置看到它自己和它前面的 window − 1 个位置"
    ),
    "nn.MultiheadAttention's key_padding_mask marks the keys to IGNORE; pass ~src_mask[:, 0, 0]": (
        "nn.MultiheadAttention 的 key_padding_mask 标出的是要忽略的键；应传入 ~src_mask[:, 0, 0]"
    ),
    "that is this course's convention (and F.scaled_dot_product_attention's); key_padding_mask is the opposite": (
        "那是本课程的约定（也是 F.scaled_dot_product_attention 的约定）；key_padding_mask 正好相反"
    ),
    "key_padding_mask is about keys (its shape is (batch, k_len)), not queries": (
        "key_padding_mask 针对的是键（它的形状是 (batch, k_len)），而不是查询"
    ),
    "key 0 is a real token and no query is before it, so every row, pad rows included, may see it": (
        "键 0 是真实的词元，而且没有哪个查询在它前面，所以每一行（包括填充位置的行）都能看到它"
    ),
    "row 0 sees key 0, and so does every later row: the causal rule lets row i see keys 0…i": (
        "第 0 行能看到键 0，之后的每一行也都能：因果规则允许第 i 行看到键 0…i"
    ),
    "the target mask hides pad KEYS, not pad queries: a pad row still sees the real tokens before it": (
        "目标掩码遮住的是填充位置的“键”，而不是填充位置的查询：填充位置的行仍能看到它前面的真实词元"
    ),
    "(64, 1, 1, 40) holds 64 · 40 = 2,560 booleans; broadcasting reuses them for 8 heads × 40 queries": (
        "(64, 1, 1, 40) 存有 64 · 40 = 2,560 个布尔值；广播把它们重复用于 8 个头 × 40 个查询"
    ),
    "that is the size of the scores (64, 8, 40, 40); the mask stores size-1 axes for heads and queries": (
        "这是分数 (64, 8, 40, 40) 的大小；掩码在头和查询两个轴上存的都是大小为 1 的轴"
    ),
    "the head axis has size 1 too: the mask is (64, 1, 1, 40), the same for every head": (
        "头这个轴的大小也是 1：掩码是 (64, 1, 1, 40)，每个头都一样"
    ),
    "the query axis has size 1: the padding mask is about keys only, (64, 1, 1, 40)": (
        "查询这个轴的大小是 1：填充掩码只针对键，(64, 1, 1, 40)"
    ),
    "count the numbers in a tensor of shape (batch, 1, 1, len)": "数一数形状为 (batch, 1, 1, len) 的张量里有多少个数",
}
