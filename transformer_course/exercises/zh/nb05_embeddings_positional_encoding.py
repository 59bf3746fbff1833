"""中文: the checkers of notebook 05 (transformer_course/exercises/nb05_embeddings_positional_encoding.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "you summed sin(ω_i·k); the dot product of two (sin, cos) pairs is sin a sin b + cos a cos b = cos(a − b)": (
        "你对 sin(ω_i·k) 求了和；两个 (sin, cos) 对的点积是 sin a sin b + cos a cos b = cos(a − b)"
    ),
    "the frequency of pair i is 1 / 10000^(2i/d_model): the exponent has 2i, the even column index, not i": (
        "第 i 对的频率是 1 / 10000^(2i/d_model)：指数里是偶数列的下标 2i，而不是 i"
    ),
    "that is the mean over the pairs; a dot product sums them": "这是对各对取的平均；点积是把它们加起来",
    "there are d_model/2 pairs (one frequency per (sin, cos) pair of columns), not d_model frequencies": (
        "一共有 d_model/2 对（每一对 (sin, cos) 列一个频率），而不是 d_model 个频率"
    ),
    "every pair turns at its own speed ω_i; you used one frequency for all of them": (
        "每一对都以自己的速度 ω_i 转动；你给所有对用了同一个频率"
    ),
    "{what} = {got:.4f}: {hint}": "{what} = {got:.4f}：{hint}",
    "{what} = {got:.4f}, but the table gives PE(10) · PE(10 + {k}) = {want:.4f}": (
        "{what} = {got:.4f}，但查表得到 PE(10) · PE(10 + {k}) = {want:.4f}"
    ),
    "Σ_i cos(ω_i·k): it depends on the distance k only, never on pos": "Σ_i cos(ω_i·k)：它只取决于距离 k，与 pos 无关",
    "the table is ({d_model}, {max_len}): one row per position, so (max_len, d_model)": (
        "这张表的形状是 ({d_model}, {max_len})：每个位置占一行，所以应是 (max_len, d_model)"
    ),
    "the table is a plain tensor or a buffer, so the optimizer never trains it: wrap it in nn.Parameter(...) (a "
    "learned table is a parameter; the sinusoidal one is a buffer)": (
        "这张表是普通张量或缓冲区（buffer），优化器永远不会训练它：用 nn.Parameter(...) 把它包起来"
        "（可学习的表是参数；正弦位置编码的表才是缓冲区）"
    ),
    "expected one parameter of shape (max_len, d_model) = ({max_len}, {d_model}), got {shapes}": (
        "应有一个形状为 (max_len, d_model) = ({max_len}, {d_model}) 的参数，实际得到 {shapes}"
    ),
    "none": "没有参数",
    "learned positions": "可学习的位置嵌入",
    "one trained vector per seat, and no seat beyond max_len": "每个座位号一个训练出来的向量，max_len 之外没有座位",
    "the output for x of shape {shape}": "x 的形状为 {shape} 时的输出",
    "{what} should have x's shape {want}, got {shape}": "{what} 应与 x 同形状 {want}，实际得到 {shape}",
    "{what}: you took the first x.size(0) rows; that is the batch size, the length is x.size(1)": (
        "{what}：你取了前 x.size(0) 行；那是批大小，序列长度是 x.size(1)"
    ),
    "{what} equals x: the positions were not added": "{what} 等于 x：没有加上位置",
    "{what} should be x + table[:len] (rows 0 … {last} of the table)": "{what} 应为 x + table[:len]（表的第 0 … {last} 行）",
    "no gradient reaches the table: use the parameter itself, not table.data or a detached copy": (
        "没有梯度传到这张表：要直接用这个参数，而不是 table.data 或 detach 之后的副本"
    ),
    "positions 4 … max_len − 1 got a gradient from a sentence of 4 tokens: slice table[:len]": (
        "一个 4 个词元的句子让位置 4 … max_len − 1 也得到了梯度：要切片 table[:len]"
    ),
    "with dropout=0.5 in training mode nothing was dropped: apply nn.Dropout(dropout) to x + table": (
        "训练模式下 dropout=0.5，却什么都没有被丢弃：对 x + table 使用 nn.Dropout(dropout)"
    ),
    "dropout should act on the sum x + table, once (nn.Dropout(p) zeroes a share p, scales the rest)": (
        "dropout 应作用在和 x + table 上，且只用一次（nn.Dropout(p) 把比例为 p 的数置零，其余的放大）"
    ),
    "a sequence of {tokens} tokens raised {error_type} from inside PyTorch; check the length first and raise a "
    "ValueError that names max_len, so the reader knows what to change": (
        "一个 {tokens} 个词元的序列在 PyTorch 内部引发了 {error_type}；请先检查长度，并抛出一个提到 max_len 的 "
        "ValueError，让读者知道该改什么"
    ),
    "a sequence of {tokens} tokens should raise a ValueError: the table has no row for it": (
        "一个 {tokens} 个词元的序列应引发 ValueError：表里没有对应的行"
    ),
    "the last pair is i = 255, so 2π · 10000^(510/512) ≈ {longest:,.0f} positions: just short of the paper's "
    "10000 · 2π, which no pair reaches": (
        "最后一对是 i = 255，所以是 2π · 10000^(510/512) ≈ {longest:,.0f} 个位置：比论文说的 10000 · 2π 略短，"
        "没有哪一对能达到那个值"
    ),
    "that is the paper's round bound 10000 · 2π; the last pair is i = d_model/2 − 1 = 255, so the exponent is "
    "2i/d_model = 510/512, not 1": (
        "这是论文给出的粗略上界 10000 · 2π；最后一对是 i = d_model/2 − 1 = 255，所以指数是 2i/d_model = 510/512，而不是 1"
    ),
    "that is 1/ω, a number of radians per position turned around: a full turn takes 2π / ω positions": (
        "这是 1/ω，把“每个位置转过的弧度”倒过来了：转一整圈需要 2π / ω 个位置"
    ),
    "the exponent is 2i/d_model with 2i the EVEN column index: the last pair has 2i = 510, not 511": (
        "指数是 2i/d_model，其中 2i 是偶数列的下标：最后一对的 2i = 510，而不是 511"
    ),
    "with i = 255 the exponent is 2i/d_model = 510/512; you used i/d_model": (
        "i = 255 时指数是 2i/d_model = 510/512；你用的是 i/d_model"
    ),
    "pair i turns by ω_i = 1/10000^(2i/d_model) per position; one full turn (2π) takes 2π/ω_i positions": (
        "第 i 对每个位置转过 ω_i = 1/10000^(2i/d_model)；转一整圈（2π）需要 2π/ω_i 个位置"
    ),
    "self-attention without positions treats the input as a set: each word's output moves with the word": (
        "没有位置信息的自注意力把输入当作一个集合：每个词的输出随这个词一起移动"
    ),
    "each output belongs to its word: when the words move, their outputs move with them (section 2's check)": (
        "每个输出属于它自己的词：词移动时，它们的输出也跟着移动（见第 2 节的检查）"
    ),
    "nothing in attention depends on where a word stands, so each word's output is the one it had before; only "
    "the order changes": "注意力中没有任何东西取决于词所在的位置，所以每个词的输出和之前一样；变的只是顺序",
    "the outputs are equal only for equal words; different words keep different outputs": (
        "只有相同的词输出才相同；不同的词仍有不同的输出"
    ),
    "§3.5: the encodings 'have the same dimension d_model as the embeddings, so that the two can be summed'": (
        "§3.5：位置编码“与嵌入具有相同的维度 d_model，以便两者相加”"
        "（'have the same dimension d_model as the embeddings, so that the two can be summed'）"
    ),
    "concatenating would make the vectors longer than d_model; the paper gives the encodings the same size "
    "d_model so that they can be added": (
        "拼接会让向量长于 d_model；论文让位置编码和嵌入同为 d_model 维，就是为了能把它们相加"
    ),
    "a product would scale each word's numbers by its position's, and PE(0) has zeros that would wipe out half of "
    "the first word; the paper adds": (
        "相乘会用位置的数去缩放每个词的数，而 PE(0) 里有零，会抹掉第一个词的一半；论文用的是相加"
    ),
}
