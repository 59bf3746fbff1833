"""中文: the checkers of notebook 02 (transformer_course/exercises/nb02_attention.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "{what} should return the pair (output, weights); it should be a tuple or a list, got {type}": (
        "{what} 应返回一对 (output, weights)；它应是元组或列表，实际得到 {type}"
    ),
    "{what} should return the pair (output, weights); it should have 2 items, got {count}": (
        "{what} 应返回一对 (output, weights)；它应有 2 项，实际有 {count} 项"
    ),
    "the mask is used the wrong way round: True means 'may attend', so fill the scores where the mask is False "
    "(masked_fill(~mask, ...))": "掩码用反了：True 表示“可以注意”，所以要填充掩码为 False 处的分数（masked_fill(~mask, ...)）",
    "with a mask, keys where the mask is False must get weight 0: fill their scores with -inf (or the most negative "
    "float) before the softmax, and do not add the mask": (
        "有掩码时，掩码为 False 的键的权重必须是 0：在 softmax 之前把它们的分数填成 -inf（或最小的浮点数），"
        "不要把掩码加到分数上"
    ),
    "the weights of each query (a row, over the keys) should sum to 1: take the softmax over the last dimension, "
    "dim=-1": "每个查询的权重（一行，对所有键）之和应为 1：在最后一个维度上做 softmax，dim=-1",
    "not scaled": "没有缩放",
    "divided by d_k": "除以了 d_k",
    "the scores are {name}: divide Q Kᵀ by √d_k = {root:.0f} (d_k is query.size(-1))": (
        "分数{name}：应把 Q Kᵀ 除以 √d_k = {root:.0f}（d_k 是 query.size(-1)）"
    ),
    "weights with a mask": "带掩码时的 weights",
    "output with a mask": "带掩码时的 output",
    "the dropout module is not used: apply it to the weights, weights = dropout(weights)": (
        "没有用到 dropout 模块：把它作用在权重上，weights = dropout(weights)"
    ),
    "dropout is applied to the output; apply it to the weights, before weights @ value": (
        "dropout 用在了输出上；应把它用在权重上，在 weights @ value 之前"
    ),
    "output with dropout on the weights": "对权重做 dropout 后的 output",
    "scaled dot-product attention": "缩放点积注意力",
    "passed: softmax(Q Kᵀ / √d_k) V with masking": "通过：带掩码的 softmax(Q Kᵀ / √d_k) V",
    "the tanh is missing: without it the query's part, q W_q · w_v, is the same for every key and cancels in the "
    "softmax, so every query gets the same weights": (
        "少了 tanh：没有它，查询那一部分 q W_q · w_v 对每个键都相同，在 softmax 中被抵消，于是每个查询得到的权重都一样"
    ),
    "the paper's additive attention uses tanh, not ReLU: w_vᵀ tanh(q W_q + k W_k)": (
        "论文中的加性注意力用的是 tanh，不是 ReLU：w_vᵀ tanh(q W_q + k W_k)"
    ),
    "the key size": "键的维度",
    "the query size": "查询的维度",
    "the scores are divided by √({name}); additive attention is not scaled: 1/√d_k belongs to dot-product "
    "attention, whose scores grow with d_k": (
        "分数除以了 √({name})；加性注意力不做缩放：1/√d_k 属于点积注意力，因为点积的分数随 d_k 增大"
    ),
    "each query's weights (a row, over the keys) should sum to 1: softmax over dim=-1": (
        "每个查询的权重（一行，对所有键）之和应为 1：在 dim=-1 上做 softmax"
    ),
    "with a mask, it": "带掩码的 additive_attention(...)",
    "additive attention": "加性注意力",
    "passed: softmax(w_vᵀ tanh(q W_q + k W_k)) V, masked": "通过：带掩码的 softmax(w_vᵀ tanh(q W_q + k W_k)) V",
    "line 1 is the signature; it is fine": "第 1 行是函数签名，没有问题",
    "line 3 is right: key.transpose(-2, -1) is (…, d_k, k_len), so query @ it is (…, q_len, k_len)": (
        "第 3 行是对的：key.transpose(-2, -1) 的形状是 (…, d_k, k_len)，所以 query @ 它的形状是 (…, q_len, k_len)"
    ),
    "line 4 is right: d_k**0.5 is √d_k (line 4 only goes wrong if d_k itself is wrong)": (
        "第 4 行是对的：d_k**0.5 就是 √d_k（只有 d_k 本身错了，第 4 行才会跟着错）"
    ),
    "line 5 is right: no mask, nothing to hide": "第 5 行是对的：没有掩码，就没有要遮住的",
    "line 8 is right: the output is weights @ value, and the weights are returned as they are": (
        "第 8 行是对的：输出是 weights @ value，权重原样返回"
    ),
    "one bug is still hidden: which size is d_k? Try buggy_attention with k_len ≠ d_k": (
        "还有一个 bug 没找到：d_k 是哪个尺寸？用 k_len ≠ d_k 的输入试试 buggy_attention"
    ),
    "one bug is still hidden: in the course's masks True means 'may attend'. Which keys does masked_fill(mask, …) "
    "hide? (-1e9 instead of -inf is fine: its weight is 0 after the softmax)": (
        "还有一个 bug 没找到：本课程的掩码中 True 表示“可以注意”。masked_fill(mask, …) 遮住的是哪些键？"
        "（用 -1e9 代替 -inf 没问题：softmax 之后它的权重就是 0）"
    ),
    "one bug is still hidden: over which axis must each query's weights sum to 1? Print weights.sum(-1)": (
        "还有一个 bug 没找到：每个查询的权重应在哪个轴上加起来等于 1？打印 weights.sum(-1) 看看"
    ),
    "not done yet: set bug_lines to the numbers of the wrong lines, e.g. [1, 5]": (
        "还没有完成：把 bug_lines 设为出错的行号，例如 [1, 5]"
    ),
    "bug_lines should be a list (or tuple, or set) of line numbers, got {type}": (
        "bug_lines 应是行号组成的列表（或元组、集合），实际得到 {type}"
    ),
    "each line number": "每个行号",
    "buggy_attention has lines 1–8 (print_numbered shows them), got {outside}": (
        "buggy_attention 只有第 1–8 行（print_numbered 会显示它们），实际得到 {outside}"
    ),
    "find the bugs": "找 bug",
    "passed: lines 2 (d_k), 6 (mask direction) and 7 (softmax axis)": (
        "通过：第 2 行（d_k）、第 6 行（掩码方向）和第 7 行（softmax 的轴）"
    ),
    "counts numbers; multiply by bytes_per_number (4 for float32) for bytes": (
        "算的是元素个数；乘以 bytes_per_number（float32 为 4）才是字节数"
    ),
    "counts bits; a byte is 8 bits, and float32 takes 4 bytes": "数的是比特；1 字节是 8 比特，float32 占 4 字节",
    "forgets the heads: each head has its own (q_len, k_len) weights": (
        "忘了头数：每个头都有自己的 (q_len, k_len) 权重"
    ),
    "forgets the batch: each sentence has its own weights": "忘了批次：每个句子都有自己的权重",
    "adds q_len and k_len: there is one weight per (query, key) pair, q_len × k_len of them": (
        "把 q_len 和 k_len 加起来了：每个（查询, 键）对有一个权重，共 q_len × k_len 个"
    ),
    "is not batch·heads·q_len·k_len·bytes_per_number": "不等于 batch·heads·q_len·k_len·bytes_per_number",
    "{what} = {got:g} {hint}": "{what} = {got:g}：{hint}",
    "memory of the weights": "注意力权重占用的内存",
    "passed: batch · heads · q_len · k_len · bytes_per_number": "通过：batch · heads · q_len · k_len · bytes_per_number",
    "the scores spread out, the softmax saturates and its gradients vanish": ("分数的分布变宽，softmax 饱和，梯度消失"),
    "(a) is the common misconception: the softmax's gradient is diag(p) − p pᵀ, and with a one-hot p every entry "
    "of it is 0. Large scores make gradients vanish, not explode": (
        "(a) 是常见的误解：softmax 的梯度是 diag(p) − p pᵀ，当 p 是 one-hot 时它的每一项都是 0。"
        "分数很大时梯度会消失，而不是爆炸"
    ),
    "(b): the softmax is unchanged if you add the same number to every score, not if you multiply them: large "
    "scores make it sharper (section 3's table)": (
        "(b)：给每个分数加上同一个数，softmax 不变；乘上同一个数则不然：分数越大，softmax 越尖锐（见第 3 节的表）"
    ),
    "(d): the scores' mean stays 0; it is their spread, √d_k, that grows": (
        "(d)：分数的均值仍是 0；变大的是它们的离散程度 √d_k"
    ),
    "adding True/False adds 1 or 0, so the pads keep a weight above 0": (
        "加上 True/False 就是加 1 或 0，所以填充位置的权重仍大于 0"
    ),
    "(a): adding a boolean adds 1 or 0, never −∞: exp(score + 0) > 0, so the pads keep a weight": (
        "(a)：加上布尔值就是加 1 或 0，绝不会是 −∞：exp(score + 0) > 0，所以填充位置仍有权重"
    ),
    "(c): NaN needs −∞ in every score of a row; a boolean added to scores is only 0 or 1": (
        "(c)：要得到 NaN，一行中的每个分数都得是 −∞；加到分数上的布尔值只是 0 或 1"
    ),
    "(d): the sum runs fine (True counts as 1); the weights are just wrong. Run the misconception cell of section 4 "
    "to see them": "(d)：相加能正常运行（True 当作 1），只是权重错了。运行第 4 节中演示这个误解的单元格看看",
    "similar theoretical complexity, but matrix-product code makes dot products faster and leaner": (
        "两者的理论复杂度相近，但借助矩阵乘法的代码，点积更快、更省空间"
    ),
    "(a): the paper says the opposite for unscaled dot products: additive attention outperforms them for larger "
    "d_k (Britz et al., 2017), the reason for 1/√d_k": (
        "(a)：对于不缩放的点积，论文说的恰恰相反：d_k 较大时加性注意力更好（Britz et al., 2017），这正是要乘 1/√d_k 的原因"
    ),
    "(b): the paper calls the two similar in theoretical complexity; the difference is in practice": (
        "(b)：论文说两者的理论复杂度相近；差别在实际运行上"
    ),
    "(c): any score can be masked before the softmax, additive ones too (exercise 1 does it)": (
        "(c)：任何分数都能在 softmax 之前加掩码，加性注意力的分数也一样（练习 1 就是这么做的）"
    ),
    "question 1 (why √d_k)": "问题 1（为什么要除以 √d_k）",
    "question 2 (scores + mask)": "问题 2（分数 + 掩码）",
    "question 3 (additive vs dot-product)": "问题 3（加性注意力与点积注意力）",
}
