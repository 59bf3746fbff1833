"""中文: the checkers of notebook 09 (transformer_course/exercises/nb09_decoding.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "{what}: write the words as strings, e.g. ['A', 'B', '</s>']": "{what}：请把词写成字符串，例如 ['A', 'B', '</s>']",
    "{what}: {unknown} are not words of the table; use 'A', 'B', 'C' and '</s>'": (
        "{what}：{unknown} 不是表中的词；请使用 'A'、'B'、'C' 和 '</s>'"
    ),
    "{what}: the output ends with '</s>'; write it too": "{what}：输出以 '</s>' 结尾；它也要写上",
    "greedy_prediction is the better sentence, but greedy cannot find it: it takes the most likely word at each "
    "step (0.5 for A at the first step) and never goes back": (
        "greedy_prediction 写的是更好的那个句子，但贪心解码找不到它：它每一步都取最可能的词（第一步取 A，0.5），而且从不回头"
    ),
    "greedy_prediction: follow the largest probability of each row, starting from the row <s>": (
        "greedy_prediction：从 <s> 那一行开始，每一行都沿着最大的概率走"
    ),
    "beam_prediction equals greedy: beam search keeps the 2 best prefixes at each step, so B (0.4) survives the "
    "first step; compare the products of the probabilities at step 2": (
        "beam_prediction 和贪心解码的结果一样：束搜索每一步保留最好的 2 个前缀，所以 B（0.4）能熬过第一步；"
        "比较第 2 步时各概率的乘积"
    ),
    "beam_prediction: B </s> has P = 0.4 · 0.1; B is far more often followed by C": (
        "beam_prediction：B </s> 的 P = 0.4 · 0.1；B 后面更常跟的是 C"
    ),
    "beam_prediction: at each step extend both prefixes by every word, multiply the probabilities, keep the best "
    "2; a prefix that ends in </s> is finished": (
        "beam_prediction：每一步把两个前缀都用每个词延长一次，把概率相乘，保留最好的 2 个；以 </s> 结尾的前缀就算完成了"
    ),
    "predictions": "预测",
    "passed: greedy says A C </s> (P = 0.18), beam search B C </s> (P = 0.252)": (
        "通过：贪心解码给出 A C </s>（P = 0.18），束搜索给出 B C </s>（P = 0.252）"
    ),
    "the result of top_k_extensions, (scores, beam, word),": "top_k_extensions 的结果 (scores, beam, word)",
    "the scores ignore the beams' own log-probabilities: a candidate's score is beam_log_probs[b] + "
    "next_log_probs[b, w]": "分数忽略了各个束自己的对数概率：候选的分数是 beam_log_probs[b] + next_log_probs[b, w]",
    "the flat index over (k, V) is beam · V + word: beam = index // V, word = index % V": (
        "在 (k, V) 上展平后的索引是 beam · V + word：beam = index // V，word = index % V"
    ),
    "beam and word are swapped": "beam 和 word 弄反了",
    "top-k extensions": "top-k 扩展",
    "passed: the k best (beam, word) pairs over all beams at once": "通过：一次性在所有束上选出最好的 k 个 (beam, word) 对",
    "lp(Y) uses 5 + |Y|, not |Y|: the ratio of the penalties is (5 + |Y_long|) / (5 + |Y_short|)": (
        "lp(Y) 用的是 5 + |Y|，而不是 |Y|：两个惩罚之比是 (5 + |Y_long|) / (5 + |Y_short|)"
    ),
    "the sign is flipped: at α = 0 the short hypothesis wins, so the crossover is a positive α (put log P_long / "
    "log P_short over (5 + |Y_long|) / (5 + |Y_short|))": (
        "符号反了：α = 0 时短的假设胜出，所以交叉点是一个正的 α"
        "（用 log P_long / log P_short 对 (5 + |Y_long|) / (5 + |Y_short|) 取对数之比）"
    ),
    "the scores are quotients, so compare the ratio log P_long / log P_short, not the difference": (
        "分数是商，所以要比较比值 log P_long / log P_short，而不是差"
    ),
    "{what} = {got:.4f}: {hint}": "{what} = {got:.4f}：{hint}",
    "{what} = {got:.4f}, but the scores are equal at α = {want:.4f}": "{what} = {got:.4f}，但两个分数在 α = {want:.4f} 处相等",
    "crossover α": "交叉点 α",
    "passed: α = ln(log P_long / log P_short) / ln((5 + |Y_long|) / (5 + |Y_short|))": (
        "通过：α = ln(log P_long / log P_short) / ln((5 + |Y_long|) / (5 + |Y_short|))"
    ),
    "the values are missing: each attention keeps its keys AND its values": "漏了值：每个注意力既要存键，也要存值",
    "the cross-attention is missing: it keeps the projected memory, src_len positions per layer": (
        "漏了交叉注意力：它存着投影后的 memory，每层 src_len 个位置"
    ),
    "that is one layer: every decoder layer keeps its own cache": "这是一层的量：每个解码器层都有自己的缓存",
    "the self-attention holds t positions after t tokens were read, not t + 1": (
        "读了 t 个词元之后，自注意力存的是 t 个位置，而不是 t + 1 个"
    ),
    "the cross-attention's length is the source's, src_len, not t": "交叉注意力的长度是源序列的长度 src_len，而不是 t",
    "{what} = {got:,}: {hint}": "{what} = {got:,}：{hint}",
    "{what} = {got:,}; the package's cache holds {want:,} numbers": "{what} = {got:,}；本课程包的缓存存了 {want:,} 个数",
    "cache numbers": "缓存中的数",
    "passed: 2 · layers · batch · heads · d_k · (t + src_len)": "通过：2 · layers · batch · heads · d_k · (t + src_len)",
    "with the causal mask, position i never reads later positions, so its keys and values never change": (
        "有了后续掩码，位置 i 从不读取后面的位置，所以它的键和值永远不会变"
    ),
    "eval mode turns dropout off, but that is not why old keys stay valid: without the causal mask a new word would "
    "change every earlier position's output, in every layer above the first": (
        "评估模式会关掉 dropout，但这不是旧的键仍然有效的原因：没有后续掩码的话，新来的词会改变之前每个位置的输出，"
        "第一层以上的每一层都如此"
    ),
    "that is true of the cross-attention's keys and values only; the self-attention's keys come from the target "
    "words, which grow by one each step": (
        "这只对交叉注意力的键和值成立；自注意力的键来自目标词，而目标词每一步都会多一个"
    ),
    "each of the k = 4 prefixes is extended by each of the 6,190 words: 24,760 candidates, one topk over them": (
        "k = 4 个前缀中的每一个都用 6,190 个词中的每一个来延长：共 24,760 个候选，在它们上面做一次 topk"
    ),
    "that is one prefix's extensions; all k = 4 prefixes are extended": "这只是一个前缀的扩展；全部 k = 4 个前缀都要延长",
    "the beam keeps k prefixes, but it scores every word after each of them": (
        "束只保留 k 个前缀，但它要给每个前缀之后的每个词打分"
    ),
    "count the (prefix, next word) pairs": "数一数（前缀, 下一个词）对",
    "every word multiplies P by a number below 1, so plain log P (α = 0) favours short outputs": (
        "每多一个词，P 就要乘上一个小于 1 的数，所以单纯的 log P（α = 0）偏爱短的输出"
    ),
    "it is the other way round: α = 1 divides log P by about the length, which helps long outputs": (
        "恰恰相反：α = 1 时 log P 大约要除以长度，这对长的输出有利"
    ),
    "log P falls with every word; only the length penalty makes up for it": (
        "log P 每多一个词就降低一些；只有长度惩罚能弥补这一点"
    ),
}
