"""中文: the checkers of notebook 11 (transformer_course/exercises/nb11_train_multi30k.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "update_average should return a dict (name → tensor), got {type}": (
        "update_average 应返回一个 dict（名称 → 张量），实际得到 {type}"
    ),
    "your code changed an input checkpoint ({name!r}); build new tensors, e.g. average[name] + (state[name] − "
    "average[name]) / count": (
        "你的代码改动了作为输入的检查点（{name!r}）；请构造新的张量，例如 average[name] + (state[name] − average[name]) / count"
    ),
    "the average has the keys {got}, expected {expected}: one per parameter": (
        "平均结果的键是 {got}，应为 {expected}：每个参数一个"
    ),
    "{name!r}: (average + new) / 2 gives the newest checkpoint half the weight and the first one 1/8; each of the "
    "count checkpoints must weigh 1/count": (
        "{name!r}：(average + new) / 2 让最新的检查点占一半权重，而第一个只占 1/8；count 个检查点中每一个都应占 1/count"
    ),
    "{name!r} is the sum of the checkpoints; the average divides by how many there are": (
        "{name!r} 是各检查点之和；平均还要除以检查点的个数"
    ),
    "{name!r} equals the last checkpoint; the older ones must count too": "{name!r} 等于最后一个检查点；较早的检查点也要算上",
    "{name!r} lost the first checkpoint: the new one joins count − 1 others, so it weighs 1/count, not 1/(count − 1)": (
        "{name!r} 丢了第一个检查点：新的检查点加入另外 count − 1 个，所以它占 1/count，而不是 1/(count − 1)"
    ),
    "the average of 4 checkpoints, {name!r}": "4 个检查点的平均，{name!r}",
    "update average": "更新平均",
    "passed: average + (new − average) / count, two checkpoints in memory": (
        "通过：average + (new − average) / count，内存中只需两个检查点"
    ),
    "the precisions are combined by a geometric mean, exp of the mean of their logs, not an arithmetic mean": (
        "各精确率要用几何平均（对数的平均再取 exp）合起来，而不是算术平均"
    ),
    "the brevity penalty is missing: a short output must pay exp(1 − ref_len / sys_len)": (
        "漏了简短惩罚：输出较短时要乘上 exp(1 − ref_len / sys_len)"
    ),
    "BLEU is reported on a 0–100 scale: multiply by 100": "BLEU 按 0–100 报告：要乘以 100",
    "the brevity penalty is upside down: exp(1 − ref_len / sys_len) is below 1 when the output is short": (
        "简短惩罚倒过来了：输出较短时 exp(1 − ref_len / sys_len) 小于 1"
    ),
    "{what} = {got:.4f}: {hint}": "{what} = {got:.4f}：{hint}",
    "{what} = {got:.4f}, sacreBLEU says {want:.4f}": "{what} = {got:.4f}，而 sacreBLEU 给出 {want:.4f}",
    "BLEU from counts": "由计数算 BLEU",
    "passed: equal to sacreBLEU's BLEU": "通过：与 sacreBLEU 的 BLEU 相同",
    "a perfect model cannot reach 0: label smoothing asks for 1 − ε on the right word and ε spread over the "
    "vocabulary, and the loss is at least the entropy of that target": (
        "完美的模型也到不了 0：标签平滑要求正确的词得到 1 − ε，ε 分散到整个词表上，损失至少是这个目标分布的熵"
    ),
    "this package (like F.cross_entropy) spreads ε over all V words, the right one included; you spread it over "
    "the V − 1 others": "本课程的包（和 F.cross_entropy 一样）把 ε 分给全部 V 个词，包括正确的词；你把它分给了其余 V − 1 个词",
    "the right word gets 1 − ε plus its own share ε / V: your target does not sum to 1": (
        "正确的词得到 1 − ε，再加上它自己的那一份 ε / V：你的目标分布加起来不等于 1"
    ),
    "that is in bits; the loss uses the natural log (nats)": "这是以比特为单位；损失用的是自然对数（奈特）",
    "{what} = {got:.4f}; the package's loss on the smoothed target is {want:.4f}": (
        "{what} = {got:.4f}；本课程包的损失在平滑后的目标上是 {want:.4f}"
    ),
    "loss floor": "损失的下限",
    "passed: the entropy of the smoothed target, the floor of the curves": "通过：平滑后目标分布的熵，也就是损失曲线的下限",
    "a real user's sentences hold words the model never saw; a vocabulary that knew the test words would make BLEU "
    "look better than it is": "真实用户的句子里有模型从没见过的词；如果词表认得测试集的词，BLEU 就会显得比实际更好",
    "speed is not the reason; the test sentences must stay as unseen as a user's": (
        "原因不在速度；测试集的句子必须像用户的句子一样，对模型来说是没见过的"
    ),
    "every split has both languages; the point is that test words must be as new to the model as a user's words": (
        "每个划分都有两种语言；关键是测试集的词对模型来说必须像用户的词一样新"
    ),
    "each of the 4 processes takes its own batch of up to 8,000 tokens, and their gradients are averaged into one "
    "step: up to 32,000 tokens per step": (
        "4 个进程各自取一个至多 8,000 个词元的批次，它们的梯度平均后合成一步：每步至多 32,000 个词元"
    ),
    "that is one GPU's batch; with DDP each of the 4 GPUs processes its own batch in the same step": (
        "这是一块 GPU 的批次；用 DDP 时，4 块 GPU 在同一步里各自处理自己的批次"
    ),
    "the batch is not split across GPUs: each GPU takes a whole batch of its own": (
        "批次并不会拆分到各块 GPU 上：每块 GPU 都取一个完整的批次"
    ),
    "count the batches that go into one optimizer step, and the tokens in each": (
        "数一数一次优化器更新用到几个批次，以及每个批次有多少词元"
    ),
    "float16 has 5 exponent bits: small gradients round to 0 unless the loss is scaled up first; bfloat16 keeps "
    "float32's 8 exponent bits and its range": (
        "float16 只有 5 个指数位：除非先把损失放大，否则很小的梯度会被舍入成 0；bfloat16 保留了 float32 的 8 个指数位和它的取值范围"
    ),
    "bfloat16 has float32's 8 exponent bits, so gradients neither overflow nor underflow more than in float32": (
        "bfloat16 有 float32 的 8 个指数位，所以梯度上溢、下溢的情况不会比 float32 更多"
    ),
    "bfloat16 needs no loss scaling: that is why the package uses it": "bfloat16 不需要损失缩放：这正是本课程的包用它的原因",
}
