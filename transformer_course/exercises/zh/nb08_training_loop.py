"""中文: the checkers of notebook 08 (transformer_course/exercises/nb08_training_loop.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "not done yet: replace the ... of {names} with your answer": "还没有完成：把 {names} 的 ... 换成你的答案",
    "{shape} is the shape of tgt itself (<s>, {longest} words, </s>); tgt_out drops its first column": (
        "{shape} 是 tgt 本身的形状（<s>、{longest} 个词、</s>）；tgt_out 去掉了它的第一列"
    ),
    "the longest sentence has {longest} words, and after them the model must predict </s>: one more column": (
        "最长的句子有 {longest} 个词，在它们之后模型还要预测 </s>：要多一列"
    ),
    "the batch comes first: (batch, T), one row per sentence": "批次维在前：(batch, T)，每个句子一行",
    "count the columns again": "再数一遍列数",
    "counts <s> too: tgt_out starts at the first word; nobody predicts <s>": (
        "把 <s> 也算进去了：tgt_out 从第一个词开始；没有谁需要预测 <s>"
    ),
    "forgets </s>: the model must learn to stop, so each </s> is a target too": (
        "漏了 </s>：模型必须学会停下，所以每个 </s> 也是一个预测目标"
    ),
    "counts the padding: pads are not words to predict, the loss skips them": (
        "把填充也算进去了：填充不是要预测的词，损失会跳过它们"
    ),
    "is not the number of real tokens in tgt_out": "不是 tgt_out 中真实词元的个数",
    "the longest sentence's </s> sat in the last column, which tgt_in drops": (
        "最长句子的 </s> 在最后一列，而 tgt_in 去掉了这一列"
    ),
    "the minimum is at p = q, and it is the entropy of q: {floor:.4f} nats, never 0 while ε > 0": (
        "最小值在 p = q 处取得，就是 q 的熵：{floor:.4f} 奈特（nats），只要 ε > 0 就不会是 0"
    ),
    "0 is the common misconception: with ε > 0 the target q itself is spread out, and the loss −Σ q log p is at "
    "least the entropy of q (reached when p = q)": (
        "0 是常见的误解：ε > 0 时目标分布 q 本身就是分散的，损失 −Σ q log p 至少是 q 的熵（在 p = q 时取到）"
    ),
    "that is ε·ln V: you let −log p(y) go to 0, but p(y) = 1 leaves every other p(v) = 0, whose −log p(v) is "
    "infinite. The best p is q itself": (
        "这是 ε·ln V：你让 −log p(y) 趋于 0，但 p(y) = 1 会让其他每个 p(v) = 0，它们的 −log p(v) 是无穷大。最好的 p 就是 q 本身"
    ),
    "that is −log q(y) only: at p = q the ε·mean_v(−log p(v)) term adds its share too": (
        "这只是 −log q(y)：在 p = q 处，ε·mean_v(−log p(v)) 这一项也要加上它的那一份"
    ),
    "that is in bits (log base 2); the loss uses the natural log (nats)": (
        "这是以比特为单位（以 2 为底的对数）；损失用的是自然对数（奈特）"
    ),
    "that spreads ε over the V − 1 wrong words; the course's form (and F.cross_entropy) spreads it over all V "
    "words: q(y) = 1 − ε + ε/V": (
        "这是把 ε 分给 V − 1 个错误的词；本课程的形式（以及 F.cross_entropy）把它分给全部 V 个词：q(y) = 1 − ε + ε/V"
    ),
    "that is V = 10, the demo's vocabulary; the toy task has V = 14": (
        "这是 V = 10，即演示所用的词表大小；玩具任务的 V = 14"
    ),
    "the loss −Σ q log p is smallest when p = q; compute −Σ_v q(v) ln q(v) for this q": (
        "损失 −Σ q log p 在 p = q 时最小；对这个 q 计算 −Σ_v q(v) ln q(v)"
    ),
    "loss_floor = {got:g}: −Σ q log p is never negative (every log p ≤ 0)": (
        "loss_floor = {got:g}：−Σ q log p 永远不会是负数（每个 log p ≤ 0）"
    ),
    "{what} = {got:g}: {hint}": "{what} = {got:g}：{hint}",
    "the loss floor": "损失的下限",
    "right: {why}": "正确：{why}",
    "peak_step = {step} is off by one: the two terms of the min are equal where step^-0.5 = step · warmup^-1.5, "
    "that is at step = warmup = {warmup} exactly": (
        "peak_step = {step} 差了一步：min 的两项在 step^-0.5 = step · warmup^-1.5 处相等，也就是恰好在 step = warmup = {warmup}"
    ),
    "peak_step = {step}: the rate rises linearly during warmup, so step 1 has the smallest rate": (
        "peak_step = {step}：预热期间学习率线性上升，所以第 1 步的学习率最小"
    ),
    "peak_step = {step}: where are the two terms of the min equal?": "peak_step = {step}：min 的两项在哪里相等？",
    "the factor lr_factor = {factor} is missing": "漏了因子 lr_factor = {factor}",
    "the factor d_model^-0.5 (d_model = {d_model}) is missing": "漏了因子 d_model^-0.5（d_model = {d_model}）",
    "that uses the paper's warmup of 4,000 steps; this preset warms up for {warmup}": (
        "这用的是论文的 4,000 步预热；这个预设的预热步数是 {warmup}"
    ),
    "that is the rate of step 1, the smallest one": "这是第 1 步的学习率，也就是最小的那个",
    "that is the paper's base model (d_model 512, warmup 4,000, no factor)": (
        "这是论文 base 模型的值（d_model 512，预热 4,000 步，没有因子）"
    ),
    "peak_rate = {rate:.3g}: {hint}": "peak_rate = {rate:.3g}：{hint}",
    "peak_rate = {rate:.3g}: put step = warmup into the formula, with all three factors": (
        "peak_rate = {rate:.3g}：把 step = warmup 代入公式，三个因子都要带上"
    ),
    "the peak of the schedule": "学习率调度的峰值",
    "passed: step {warmup}, rate {factor} · ({d_model} · {warmup})^-0.5 = {rate:.3e}": (
        "通过：第 {warmup} 步，学习率 {factor} · ({d_model} · {warmup})^-0.5 = {rate:.3e}"
    ),
    "the peak is lr_factor · (d_model · warmup)^-0.5: twice the d_model gives 1/√2 of the rate": (
        "峰值是 lr_factor · (d_model · warmup)^-0.5：d_model 翻倍，学习率变为原来的 1/√2"
    ),
    "(a): d_model has the power −0.5 in the formula: a bigger model gets a smaller rate": (
        "(a)：公式中 d_model 的指数是 −0.5：模型越大，学习率越小"
    ),
    "(b): the power is −0.5, not −1: the rate shrinks by √2, not by 2": (
        "(b)：指数是 −0.5，不是 −1：学习率缩小为 1/√2，而不是 1/2"
    ),
    "(d): the factor d_model^-0.5 multiplies every step's rate, the peak too": (
        "(d)：因子 d_model^-0.5 乘在每一步的学习率上，峰值也不例外"
    ),
    "perplexity rewards putting all the mass on the right word; a smoothed model keeps ε of it on the others by "
    "design, which costs perplexity and helps BLEU (§5.4, Table 3 rows D)": (
        "困惑度奖励把全部概率放在正确的词上；标签平滑后的模型按设计要把 ε 的概率留给其他词，"
        "这会损失困惑度，却有助于 BLEU（§5.4，表 3 的 (D) 行）"
    ),
    "(a): no bug is needed to explain it; the paper predicts it: label smoothing 'hurts perplexity, as the model "
    "learns to be more unsure, but improves accuracy and BLEU score' (§5.4)": (
        "(a)：不需要有 bug 才能解释它；论文早就预言了：标签平滑 'hurts perplexity, as the model learns to be more "
        "unsure, but improves accuracy and BLEU score'（§5.4，译：会损害困惑度，因为模型学得更不确定，"
        "但能提高准确率和 BLEU 分数）"
    ),
    "(c): it is the other way round: smoothing is a regulariser, it works against over-confidence and "
    "over-fitting": "(c)：恰恰相反：标签平滑是一种正则化，它抑制过度自信和过拟合",
    "(d): they measure different things: perplexity the probability given to the reference word, BLEU the n-gram "
    "overlap of the translation a beam search writes": (
        "(d)：两者衡量的东西不同：困惑度衡量给参考词的概率，BLEU 衡量束搜索写出的译文与参考译文的 n 元语法重合度"
    ),
    "about 25,000 target tokens per batch (§5.1) × 100,000 steps (§5.2) = 2.5·10⁹ target tokens": (
        "每批约 25,000 个目标词元（§5.1）× 100,000 步（§5.2）= 2.5·10⁹ 个目标词元"
    ),
    "that counts source and target tokens; the question asks for target tokens only": (
        "这把源词元和目标词元都算上了；题目只问目标词元"
    ),
    "4,000 is the warmup; the base model trained for 100,000 steps (§5.2)": (
        "4,000 是预热步数；base 模型训练了 100,000 步（§5.2）"
    ),
    "that is one batch; multiply by the number of steps (100,000, §5.2)": "这只是一个批次；要乘以步数（100,000，§5.2）",
    "multiply the target tokens per batch (§5.1) by the training steps of the base model (§5.2)": (
        "用每批的目标词元数（§5.1）乘以 base 模型的训练步数（§5.2）"
    ),
    "batch_numbers should be a function of lengths, got {type}": "batch_numbers 应该是一个以 lengths 为参数的函数，得到的是 {type}",
    "batch_numbers({lengths}) should return three things (shape, n_tokens, eos), got {got!r}": "batch_numbers({lengths}) 应该返回三样东西（形状、n_tokens、eos），得到的是 {got!r}",
    "every target is a pad (id 0): there is no real token to average over; use ids ≥ 1": "每个目标都是填充（id 0）：没有可以求平均的真实词元；请用 ≥ 1 的 id",
    "expose the bug": "让缺陷现形",
    "for lengths {lengths}: {what} = {got} {hint}": "长度为 {lengths} 时：{what} = {got}：{hint}",
    "for lengths {lengths}: {what} = {got}: {hint}": "长度为 {lengths} 时：{what} = {got}：{hint}",
    "logits_input should be a float tensor (batch, T, V), got {got}": "logits_input 应该是形状为 (batch, T, V) 的浮点张量，得到的是 {got}",
    "on this input both give {value:.4f}: the bug does not show. Subtracting the maximum keeps the largest logit at 0; what does softmax give a word whose logit is far below it, and what is the log of that?": "在这个输入上两者都得到 {value:.4f}：缺陷没有显现。减去最大值只保证最大的 logit 为 0；对一个 logit 远低于它的词，softmax 给出多少？它的对数又是多少？",
    "passed: a word far below the best gets a probability that rounds to 0, its log is −inf and the loss inf; log_softmax (shifted − log Σ exp shifted) never rounds to 0": "通过：一个远低于最佳词的词得到的概率被舍入为 0，它的对数是 −inf，损失变成 inf；log_softmax（shifted − log Σ exp shifted）永远不会舍入为 0",
    "passed: right for every batch tried, ties for the longest sentence included": "通过：试过的每个批次都对，包括最长句子并列的情况",
    "target ids must lie in [0, V = {vocab})": "目标 id 必须位于 [0, V = {vocab}) 之内",
    "target_input is {target} but logits_input is {logits}: one target id per (batch, T) position": "target_input 是 {target}，而 logits_input 是 {logits}：每个 (batch, T) 位置一个目标 id",
    "target_input should be a long tensor (batch, T) of token ids, got {got}": "target_input 应该是形状为 (batch, T) 的 long 型词元 id 张量，得到的是 {got}",
    "the numbers of a batch": "一个批次的数字",
    "write out the rows of tgt and cut the last column": "把 tgt 的各行写出来，再去掉最后一列",
    "your logits hold inf or nan: no loss is defined for them. The bug shows on finite logits — how large a gap between two logits can softmax hold in float32?": "你的 logits 含有 inf 或 nan：对它们没有定义损失。缺陷在有限的 logits 上就会显现——在 float32 中，softmax 能承受两个 logit 之间多大的差距？",
    "{count} sentences share the longest length {longest}: each has its </s> in the last column, so each loses it in tgt_in, not only one": "有 {count} 个句子并列最长（{longest} 个词）：每个句子的 </s> 都在最后一列，所以在 tgt_in 中它们都丢掉了 </s>，而不只是一个",
    "a {dtype} tensor of shape {shape}": "形状为 {shape} 的 {dtype} 张量",
}
