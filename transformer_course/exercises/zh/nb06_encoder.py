"""中文: the checkers of notebook 06 (transformer_course/exercises/nb06_encoder.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "{what} should be a {rows} × {columns} table (a list of lists) of True/False": (
        "{what} 应是一个 {rows} × {columns} 的表格（列表的列表），元素为 True/False"
    ),
    "the real tokens of sentence 1 change too: without the mask their queries also read the two <pad> keys": (
        "句子 1 的真实词元也会变：没有掩码时，它们的查询也会读到那两个 <pad> 键"
    ),
    "the <pad> positions of sentence 1 are queries as well: with the mask they read the 3 real keys only, without "
    "it all 5 keys, so their outputs change too": (
        "句子 1 的 <pad> 位置同样是查询：有掩码时它们只读 3 个真实的键，没有掩码时读全部 5 个键，所以它们的输出也会变"
    ),
    "sentence 0 has no <pad>: its mask allows every key, so leaving it out changes nothing there": (
        "句子 0 没有 <pad>：它的掩码允许每个键，所以去掉掩码对它毫无影响"
    ),
    "leaving the mask out lets every query of sentence 1 read its two <pad> keys: its outputs change": (
        "去掉掩码后，句子 1 的每个查询都会读到它的两个 <pad> 键：它的输出会变"
    ),
    "sentence {sentence}, position {position}: you said {said}; run both and compare": (
        "句子 {sentence}，位置 {position}：你填的是 {said}；把两种情况都运行一遍比较一下"
    ),
    "mask effect": "掩码的作用",
    "only the sentence that has <pad> changes, at every one of its positions": "只有含 <pad> 的句子会变，而且它的每个位置都变",
    "the window reaches back only: §4 centres it 'around the respective output position', w positions to each side": (
        "窗口只向前延伸：§4 让它以“相应的输出位置为中心”（'around the respective output position'），两侧各 w 个位置"
    ),
    "off by one: a window of w holds every key at distance ≤ w (w = 1: the word and its two neighbours)": (
        "差了一格：大小为 w 的窗口包含所有距离 ≤ w 的键（w = 1：这个词和它左右两个邻居）"
    ),
    "a <pad> key inside the window must stay hidden: combine the window with the padding mask (&)": (
        "窗口内的 <pad> 键也必须遮住：把窗口和填充掩码组合起来（&）"
    ),
    "the window is missing: that is the padding mask alone, broadcast over the queries": (
        "少了窗口：这只是在查询上广播的填充掩码"
    ),
    "{what} is (batch, S, S); add the heads axis, (batch, 1, S, S), so it broadcasts over heads": (
        "{what} 的形状是 (batch, S, S)；加上头这个轴，变成 (batch, 1, S, S)，这样它才能在各个头上广播"
    ),
    "{what} is inverted: True should mean 'may attend'": "{what} 的真假反了：True 应表示“可以注意”",
    "{what}: {hint}": "{what}：{hint}",
    "{what}: sentence {b}, query {q}, key {k} should be {value}": "{what}：句子 {b}、查询 {q}、键 {k} 处应为 {value}",
    "local window mask": "局部窗口掩码",
    "each word sees the real words at most w seats away, on both sides": "每个词看到两侧至多相隔 w 个座位的真实词",
    "that is one layer; the encoder has N of them": "这是一层的参数；编码器有 N 层",
    "the biases are missing (4 in attention, b_1 and b_2 in the FFN)": (
        "漏了偏置（注意力中 4 个，前馈网络中的 b_1 和 b_2）"
    ),
    "the two LayerNorms of each layer are missing (γ and β, d_model each)": (
        "漏了每层的两个层归一化（γ 和 β，各 d_model 个）"
    ),
    "each layer has two LayerNorms, each with γ and β (2 · d_model); you counted half": (
        "每层有两个层归一化，每个都有 γ 和 β（2 · d_model）；你只算了一半"
    ),
    "multi-head attention has four d_model × d_model projections: W^Q, W^K, W^V and the output W^O": (
        "多头注意力有四个 d_model × d_model 的投影：W^Q、W^K、W^V 和输出投影 W^O"
    ),
    "the FFN has two matrices, W_1 (d_model × d_ff) and W_2 (d_ff × d_model)": (
        "前馈网络有两个矩阵，W_1 (d_model × d_ff) 和 W_2 (d_ff × d_model)"
    ),
    "count, per layer: attention 4·d_model² + 4·d_model, FFN 2·d_model·d_ff + d_ff + d_model, two LayerNorms "
    "2·2·d_model; then multiply by N": (
        "按层来数：注意力 4·d_model² + 4·d_model，前馈网络 2·d_model·d_ff + d_ff + d_model，"
        "两个层归一化 2·2·d_model；再乘以 N"
    ),
    "{what} returned {got:,}, expected {expected:,}: {hint}": "{what} 返回 {got:,}，应为 {expected:,}：{hint}",
    "matches the package's Encoder for three sizes, the paper's base encoder included": (
        "在三种尺寸下都与本课程包中的 Encoder 一致，包括论文的 base 编码器"
    ),
    "a module listed N times is one module: its weights are shared, so the stack has one layer's parameters": (
        "列了 N 次的同一个模块仍是一个模块：它的权重是共享的，所以整个栈只有一层的参数"
    ),
    "PyTorch accepts the same module several times in a ModuleList; nothing fails, which is why the mistake is "
    "easy to miss": "PyTorch 允许同一个模块在 ModuleList 中出现多次；不会报任何错，所以这个错误很容易被忽略",
    "the N entries are one object: training one trains all of them, and the parameter count is one layer's (count "
    "them with sum(p.numel() for p in encoder.parameters()))": (
        "这 N 项是同一个对象：训练其中一个就训练了全部，参数量也只有一层的"
        "（用 sum(p.numel() for p in encoder.parameters()) 数一数）"
    ),
    "each layer reaches w = 5 positions further: 5, 10, 15 ≥ 12 after 3 layers, the O(n/r) path of §4": (
        "每多一层就多够到 w = 5 个位置：5、10、15 ≥ 12，共 3 层，即 §4 的 O(n/r) 路径长度"
    ),
    "12 / 5 = 2.4: round UP — after 2 layers the influence has reached 10 positions, not 12": (
        "12 / 5 = 2.4：要向上取整——2 层之后影响只传到 10 个位置，还没到 12"
    ),
    "each layer lets information travel w = 5 positions, not 1": "每一层让信息传递 w = 5 个位置，而不是 1 个",
    "one layer reaches only w = 5 positions away": "一层只能够到 w = 5 个位置之外",
    "after L layers the output at position 12 can depend on inputs down to 12 − 5·L": (
        "L 层之后，位置 12 的输出最远能依赖到位置 12 − 5·L 的输入"
    ),
    "two per layer (after self-attention and after the FFN), six layers, and no extra one at the end of a post-LN "
    "stack": "每层两个（自注意力之后和前馈网络之后），共六层，post-LN 的栈末尾没有额外的层归一化",
    "a post-LN stack ends without an extra LayerNorm (its last layer already ends with one); only a pre-LN stack "
    "adds one": "post-LN 的栈末尾没有额外的层归一化（它的最后一层本身就以层归一化结尾）；只有 pre-LN 的栈才会加一个",
    "each layer has two: one after self-attention, one after the FFN": "每层有两个：自注意力之后一个，前馈网络之后一个",
    "that is the encoder and the decoder together, and the decoder has three per layer; count the encoder only": (
        "这是编码器和解码器加在一起，而且解码器每层有三个；只数编码器"
    ),
    "count the Add & Norm boxes of one encoder layer in Figure 1, then the layers": (
        "先数图 1 中一个编码器层里的 Add & Norm 方框，再数层数"
    ),
}
