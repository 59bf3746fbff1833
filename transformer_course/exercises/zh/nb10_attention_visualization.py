"""中文: the checkers of notebook 10 (transformer_course/exercises/nb10_attention_visualization.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "your entropy is NaN for a head whose weights contain 0: 0 · log 0 must count as 0 (e.g. torch.where(w > 0, "
    "w * w.log(), 0) or w * w.clamp_min(1e-30).log())": (
        "对于权重中含 0 的头，你算出的熵是 NaN：0 · log 0 必须按 0 计"
        "（例如 torch.where(w > 0, w * w.log(), 0) 或 w * w.clamp_min(1e-30).log()）"
    ),
    "your values are in bits (log2); use the natural log (torch.log), so a uniform row over k keys gives ln k": (
        "你的结果以比特为单位（log2）；请用自然对数（torch.log），这样 k 个键上均匀分布的一行给出 ln k"
    ),
    "you summed the entropies of the rows; take their mean over the queries (.mean(-1))": (
        "你把各行的熵加起来了；应在查询上取平均（.mean(-1)）"
    ),
    "head_entropy(one-hot head, uniform head)": "head_entropy（one-hot 的头，均匀的头）",
    "NaN: masked keys have weight 0, and 0 · log 0 must count as 0": "NaN：被掩码遮住的键权重为 0，而 0 · log 0 必须按 0 计",
    "you summed over the queries (dim -2); each row (one query) is a distribution over keys: sum over dim -1": (
        "你在查询上（dim -2）求了和；每一行（一个查询）是键上的一个分布：应在 dim -1 上求和"
    ),
    "head_entropy(weights {shape}, causal)": "head_entropy（形状为 {shape} 的因果权重）",
    "head entropy": "注意力头的熵",
    "passed: 0 for a one-hot head, ln k for a uniform one, 0 · log 0 = 0": (
        "通过：one-hot 的头为 0，均匀的头为 ln k，0 · log 0 = 0"
    ),
    "alignment should return a tensor of source positions, got {type}": "alignment 应返回由源位置组成的张量，实际得到 {type}",
    "you got one entry per source position: take the argmax over the keys (dim -1), one per target query": (
        "你得到的是每个源位置一项：应在键上（dim -1）取 argmax，每个目标查询一个"
    ),
    "you got one row per head: average the heads first (weights.mean(0)), then take the argmax": (
        "你得到的是每个头一行：先对各头取平均（weights.mean(0)），再取 argmax"
    ),
    "this is head 0 alone; average over all heads (mean over dim 0) before the argmax": (
        "这只是第 0 个头；取 argmax 之前要对所有头取平均（在 dim 0 上求均值）"
    ),
    "return positions (a LongTensor from .argmax), not weights": "返回位置（由 .argmax 得到的 LongTensor），而不是权重",
    "alignment(random cross-attention (2, 6, 7))": "alignment（随机的交叉注意力 (2, 6, 7)）",
    "passed: one source position per target position, from the head mean": "通过：由各头的平均，给每个目标位置找出一个源位置",
    "the capture keeps one sentence and drops the batch axis: (heads, q_len, k_len)": (
        "capture 只保留一个句子，去掉了批次维：(heads, q_len, k_len)"
    ),
    "there is one (q_len, k_len) table per head: (heads, q_len, k_len)": (
        "每个头都有一张 (q_len, k_len) 的表：(heads, q_len, k_len)"
    ),
    "rows are queries, columns keys: (heads, q_len, k_len)": "行是查询，列是键：(heads, q_len, k_len)",
    "the decoder reads <s> first (the target shifted right, notebook 08): its positions are the {symbols} target "
    "symbols plus <s>": "解码器先读入 <s>（目标序列右移一位，见笔记本 08）：它的位置是 {symbols} 个目标符号再加上 <s>",
    "decoder self-attention's keys are target positions too, not source ones": (
        "解码器自注意力的键也是目标序列的位置，而不是源序列的"
    ),
    "count the heads, the queries and the keys again": "再数一遍头数、查询数和键数",
    "{what} = {got}: {hint}": "{what} = {got}：{hint}",
    "captured shapes": "捕获的形状",
    "passed: (heads, q_len, k_len), and the decoder's axis has <s> in front": (
        "通过：(heads, q_len, k_len)，而且解码器的轴最前面有 <s>"
    ),
    "the causal mask gives every future key −∞ before the softmax, so its weight is exactly 0": (
        "后续掩码在 softmax 之前给每个未来的键 −∞，所以它的权重恰好是 0"
    ),
    "masked scores are −∞ (or the smallest float), so after the softmax they are exactly 0, not small": (
        "被遮住的分数是 −∞（或最小的浮点数），所以 softmax 之后恰好是 0，而不只是很小"
    ),
    "the mask is the same for every head: no head may look at the future": "每个头的掩码都一样：没有哪个头能看到未来",
    "a uniform row over 8 keys has entropy −8 · (1/8) ln(1/8) = ln 8 ≈ 2.079 nats": (
        "8 个键上均匀分布的一行，熵为 −8 · (1/8) ln(1/8) = ln 8 ≈ 2.079 奈特"
    ),
    "that is in bits (log base 2); the course measures entropy in nats (natural log)": (
        "这是以比特为单位（以 2 为底的对数）；本课程用奈特（自然对数）度量熵"
    ),
    "that is the weight of each key, 1/8; the entropy is −Σ w ln w": "这是每个键的权重 1/8；熵是 −Σ w ln w",
    "that is the number of keys; the entropy of a uniform row is its logarithm": "这是键的个数；均匀分布的一行，熵是它的对数",
    "use H = −Σ_j w_j ln w_j with w_j = 1/8 for each of the 8 keys": "用 H = −Σ_j w_j ln w_j，8 个键各有 w_j = 1/8",
    "a weight says where one head read; W^O, the other heads and later layers decide what is done with it": (
        "一个权重只说明一个头读了哪里；读到的东西怎么用，由 W^O、其他头和后面的层决定"
    ),
    "a heatmap cannot show why the model chose a word: the head's output is mixed with the other heads by W^O and "
    "changed by the feed-forward and later layers": (
        "热力图无法说明模型为什么选了某个词：这个头的输出会经 W^O 与其他头混合，还会被前馈网络和后面的层改变"
    ),
    "each head has its own weights; one head's 0.9 says nothing about what the other heads read": (
        "每个头都有自己的权重；一个头的 0.9 说明不了其他头读了什么"
    ),
}
