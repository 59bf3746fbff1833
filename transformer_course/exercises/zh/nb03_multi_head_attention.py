"""中文: the checkers of notebook 03 (transformer_course/exercises/nb03_multi_head_attention.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "the heads are split with one view (batch, heads, len, d_k), which cuts the sequence into pieces and mixes "
    "positions: view as (batch, len, heads, d_k), then .transpose(1, 2)": (
        "拆分注意力头时只用了一次 view (batch, heads, len, d_k)，这会把序列切成几段、把位置混在一起："
        "应先 view 成 (batch, len, heads, d_k)，再 .transpose(1, 2)"
    ),
    "the heads are merged in the wrong order: (batch, heads, len, d_k) must go back to (batch, len, heads, d_k) "
    "with .transpose(1, 2) before the reshape to (batch, len, d_model)": (
        "合并注意力头的顺序错了：(batch, heads, len, d_k) 要先用 .transpose(1, 2) 变回 (batch, len, heads, d_k)，"
        "再 reshape 成 (batch, len, d_model)"
    ),
    "the rows of in_proj are used in the wrong order: rows 0 … d_model−1 are W^Q, then W^K, then W^V "
    "(nn.MultiheadAttention's layout)": (
        "in_proj 的各行用错了顺序：第 0 … d_model−1 行是 W^Q，然后是 W^K，再然后是 W^V（nn.MultiheadAttention 的排布）"
    ),
    "keys and values are computed from `query`: in cross-attention they come from the `key` and `value` arguments "
    "(the encoder's memory)": (
        "键和值是由 `query` 算出来的：在交叉注意力中，它们来自参数 `key` 和 `value`（编码器的输出 memory）"
    ),
    "the scores are divided by √d_model; each head works in d_k = d_model / heads dimensions, so divide by √d_k "
    "(notebook 02's function does it when it gets (batch, heads, len, d_k) tensors)": (
        "分数除以了 √d_model；每个头在 d_k = d_model / heads 维中计算，所以应除以 √d_k"
        "（笔记本 02 的函数拿到 (batch, heads, len, d_k) 的张量时就是这样做的）"
    ),
    "the mask is not passed on: keys where it is False must get weight 0": (
        "掩码没有传下去：掩码为 False 的键，权重必须是 0"
    ),
    "the parameters should be named {names} (as the package's, so that weights can be copied by name); missing "
    "{missing}, unexpected {unexpected}": (
        "参数应命名为 {names}（与本课程的包一致，这样权重才能按名称复制）；缺少 {missing}，多出 {unexpected}"
    ),
    "self-attention with a padding mask": "带填充掩码的自注意力",
    "masked self-attention": "带后续掩码的自注意力",
    "cross-attention": "交叉注意力",
    "cross-attention with a padding mask": "带填充掩码的交叉注意力",
    "{what}: {hint}": "{what}：{hint}",
    "{what}: the output (batch, q_len, d_model)": "{what}：输出 (batch, q_len, d_model)",
    "MultiHeadAttention(10, 4) should raise an error: d_model=10 is not divisible by heads=4": (
        "MultiHeadAttention(10, 4) 应抛出错误：d_model=10 不能被 heads=4 整除"
    ),
    "passed: self, masked and cross-attention, per-head weights kept": (
        "通过：自注意力、带掩码的自注意力和交叉注意力都对，并保留了每个头的权重"
    ),
    "that is before the transpose: split_heads puts the heads before the positions": (
        "这是转置之前的形状：split_heads 会把头这个轴放到位置之前"
    ),
    "each head has d_k = d_model / heads = 64 features, not d_model": (
        "每个头有 d_k = d_model / heads = 64 个特征，而不是 d_model 个"
    ),
    "that is before the split: the queries are cut into heads, (batch, heads, T, d_k)": (
        "这是拆分之前的形状：查询要切成多个头，(batch, heads, T, d_k)"
    ),
    "keys come from the source, the encoder's memory: S = 6 positions, not T": (
        "键来自源序列，即编码器的输出 memory：S = 6 个位置，而不是 T"
    ),
    "that is before the transpose: heads come before positions": "这是转置之前的形状：头这个轴在位置之前",
    "rows are queries (the target, T), columns are keys (the source, S)": "行是查询（目标序列，T），列是键（源序列，S）",
    "each head has its own weights: (batch, heads, T, S)": "每个头都有自己的权重：(batch, heads, T, S)",
    "cross-attention weights are not square: T queries against S keys": ("交叉注意力的权重不是方阵：T 个查询对 S 个键"),
    "there is one output per query (T of them), an average over the S values": (
        "每个查询有一个输出（共 T 个），它是 S 个值的加权平均"
    ),
    "that is the weights; weights @ v has one d_v = 64 vector per query": (
        "这是权重的形状；weights @ v 为每个查询给出一个 d_v = 64 维的向量"
    ),
    "the block returns one vector per query, the target's T positions": (
        "这个模块为每个查询返回一个向量，即目标序列的 T 个位置"
    ),
    "merging the heads and W^O give back d_model = 512 features": "合并各头并经过 W^O 之后，又回到 d_model = 512 个特征",
    "that is before the merge: Concat and W^O give (batch, T, d_model)": (
        "这是合并之前的形状：Concat 和 W^O 之后是 (batch, T, d_model)"
    ),
    "predicted should be a dict such as {{'q': (…), 'k': (…), …}}, got {type}": (
        "predicted 应是一个 dict，例如 {{'q': (…), 'k': (…), …}}，实际得到 {type}"
    ),
    "predicted has no entry for {missing}; fill in all of {names}": "predicted 缺少 {missing} 项；请把 {names} 都填上",
    "not done yet: replace the `...` of {blank} with your predicted shapes, e.g. (1, 2, 3)": (
        "还没有完成：把 {blank} 的 `...` 换成你预测的形状，例如 (1, 2, 3)"
    ),
    "expected {dims} dimensions, ending with the right sizes": "应有 {dims} 个维度，并以正确的大小结尾",
    "{what} = {got}: {hint}": "{what} = {got}：{hint}",
    "predicted shapes": "预测的形状",
    "passed: now run the next cell to see them measured": "通过：现在运行下一个单元格，看看实际测出的形状",
    "uses d_model × d_model for every projection; that holds only when heads·d_k = heads·d_v = d_model. W^Q and "
    "W^K are d_model × heads·d_k, W^V d_model × heads·d_v": (
        "每个投影都按 d_model × d_model 算了；只有 heads·d_k = heads·d_v = d_model 时才是这样。"
        "W^Q 和 W^K 是 d_model × heads·d_k，W^V 是 d_model × heads·d_v"
    ),
    "counts the weights only: W^Q and W^K have biases of size heads·d_k, W^V of size heads·d_v, W^O of size "
    "d_model": "只算了权重矩阵：W^Q 和 W^K 的偏置大小为 heads·d_k，W^V 的为 heads·d_v，W^O 的为 d_model",
    "sizes W^O by d_k; it takes the concatenated values, heads·d_v × d_model": (
        "按 d_k 算了 W^O 的大小；它接收的是拼接起来的值，heads·d_v × d_model"
    ),
    "counts one head: every head has its own W_i^Q, W_i^K, W_i^V, so all heads together are heads·d_k (or "
    "heads·d_v) wide": (
        "只算了一个头：每个头都有自己的 W_i^Q、W_i^K、W_i^V，所以所有头合起来宽 heads·d_k（或 heads·d_v）"
    ),
    "add up four matrices and four biases": "把四个矩阵和四个偏置加起来",
    "{what} = {got}, expected {want}: {hint}": "{what} = {got}，应为 {want}：{hint}",
    "parameter count": "参数个数",
    "passed: heads·d_k and heads·d_v set the widths, not d_model": "通过：决定宽度的是 heads·d_k 和 heads·d_v，而不是 d_model",
    "counts FLOPs (a multiply and an add each); count each multiply-add once": (
        "算的是 FLOPs（每次乘加算一次乘法和一次加法）；每次乘加只算一次"
    ),
    "projects keys and values from q_len positions; in cross-attention they come from the memory, k_len positions": (
        "按 q_len 个位置投影了键和值；在交叉注意力中，它们来自 memory，共 k_len 个位置"
    ),
    "uses d_model-long dot products in every head; each head's are d_k = d_model / heads long": (
        "每个头里都用了长度为 d_model 的点积；每个头的点积长度是 d_k = d_model / heads"
    ),
    "leaves out W^O, the output projection": "漏了输出投影 W^O",
    "leaves out one of the two attention products, Q Kᵀ or weights @ V": (
        "漏了注意力中两个乘积之一：Q Kᵀ 或 weights @ V"
    ),
    "add the four projections and two products": "把四个投影和两个乘积加起来",
    "multiply-adds": "乘加次数",
    "passed: 2·B·(T + S)·d_model² + 2·B·T·S·d_model": "通过：2·B·(T + S)·d_model² + 2·B·T·S·d_model",
    "one head is 0.9 BLEU worse than the best setting, and too many heads are worse too (§6.2)": (
        "单头比最佳设置差 0.9 BLEU，头太多也会变差（§6.2）"
    ),
    "(a): §6.2 says quality also drops off with too many heads (32 heads: 25.4 BLEU against 25.8)": (
        "(a)：§6.2 说头太多质量也会下降（32 个头：25.4 BLEU，而最佳为 25.8）"
    ),
    "(c): single-head attention is 0.9 BLEU worse than the best setting (§6.2, Table 3 (A))": (
        "(c)：单头注意力比最佳设置差 0.9 BLEU（§6.2，表 3 (A)）"
    ),
    "(d): every row of (A) has the same parameter count (exercise 2: heads·d_k stays 512), and one head scored "
    "lowest": "(d)：(A) 的每一行参数量都相同（练习 2：heads·d_k 保持为 512），而单头的得分最低",
    "keys and values are the encoder's output, the memory, in every decoder layer": (
        "在每个解码器层中，键和值都是编码器的输出 memory"
    ),
    "(a): the previous decoder layer gives the queries; keys and values come from the encoder": (
        "(a)：上一个解码器层给出的是查询；键和值来自编码器"
    ),
    "(b): the target side gives only the queries in cross-attention": "(b)：在交叉注意力中，目标一侧只提供查询",
    "(d): the keys and values come from the encoder's final output (after all N layers), not from the source "
    "embeddings": "(d)：键和值来自编码器的最终输出（经过全部 N 层之后），而不是源序列的嵌入",
    "question 1 (how many heads)": "问题 1（多少个头）",
    "question 2 (cross-attention)": "问题 2（交叉注意力）",
}
