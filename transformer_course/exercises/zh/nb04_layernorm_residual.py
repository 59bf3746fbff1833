"""中文: the checkers of notebook 04 (transformer_course/exercises/nb04_layernorm_residual.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "you normalised over the batch (dim 0), which is BatchNorm; LayerNorm normalises each row over its last "
    "dimension (dim=-1)": "你在批次维（dim 0）上做了归一化，那是 BatchNorm；层归一化是对每一行在最后一个维度（dim=-1）上归一化",
    "you used the unbiased variance (divides by n−1); LayerNorm divides by n: x.var(dim=-1, unbiased=False)": (
        "你用了无偏方差（除以 n−1）；层归一化除以的是 n：x.var(dim=-1, unbiased=False)"
    ),
    "ε belongs inside the square root, √(var + ε), not √var + ε: it matters for rows with a tiny spread": (
        "ε 应放在平方根里面，√(var + ε)，而不是 √var + ε：对取值几乎不分散的行，这一点很关键"
    ),
    "the normalised values are right, but γ (gain) and β (bias) are not applied: γ · x̂ + β": (
        "归一化后的值是对的，但没有乘上 γ（增益）、加上 β（偏置）：γ · x̂ + β"
    ),
    "you divided by the variance; divide by the standard deviation √(var + ε)": (
        "你除以了方差；应除以标准差 √(var + ε)"
    ),
    "LayerNorm's parameters should be named 'weight' (γ) and 'bias' (β), got {names}": (
        "LayerNorm 的参数应命名为 'weight'（γ）和 'bias'（β），实际得到 {names}"
    ),
    "LayerNorm({features}) on an input of shape {shape}": "LayerNorm({features}) 作用在形状为 {shape} 的输入上",
    "{what}: {hint}": "{what}：{hint}",
    "LayerNorm(8, eps=1e-3) (use the eps argument, self.eps, not a fixed 1e-5)": (
        "LayerNorm(8, eps=1e-3)（要用参数 eps，即 self.eps，而不是写死的 1e-5）"
    ),
    "equals nn.LayerNorm, also on rows with a tiny spread": "与 nn.LayerNorm 一致，对取值几乎不分散的行也一样",
    "dropout is applied to the sum, residual included; the paper drops only the sub-layer's output, 'before it is "
    "added to the sub-layer input' (§5.4)": (
        "dropout 用在了相加的结果上，连残差也一起丢弃了；论文只对子层的输出做 dropout，"
        "“在它与子层输入相加之前”（'before it is added to the sub-layer input'，§5.4）"
    ),
    "in training mode dropout should zero some of the sub-layer's outputs: apply self.dropout to them": (
        "在训练模式下，dropout 应把子层输出中的一部分置零：对它们使用 self.dropout"
    ),
    "dropout is applied after the LayerNorm; it belongs on the sub-layer's output, before the +": (
        "dropout 用在了层归一化之后；它应作用在子层的输出上，在 + 之前"
    ),
    "the only parameters should be self.norm's, norm.weight and norm.bias; got {names}": (
        "唯一的参数应是 self.norm 的 norm.weight 和 norm.bias；实际得到 {names}"
    ),
    "norm(sublayer(x)) (the residual x is missing)": "norm(sublayer(x))（缺少残差 x）",
    "sublayer(norm(x)) (the residual x is missing)": "sublayer(norm(x))（缺少残差 x）",
    "{what} in eval mode computed {computed}; it should be {formula}": (
        "{what} 在评估模式下算的是 {computed}；应为 {formula}"
    ),
    "{what} in eval mode": "评估模式下的 {what}",
    "{what} in training mode: {hint}": "{what}（训练模式）：{hint}",
    "{what} in training mode": "训练模式下的 {what}",
    "post-LN and pre-LN right, dropout on the sub-layer's output": "post-LN 和 pre-LN 都对，dropout 作用在子层的输出上",
    "you subtracted the mean, which is LayerNorm; RMSNorm only rescales: x / √(mean(x²) + ε) · γ": (
        "你减去了均值，那是层归一化；RMSNorm 只做缩放：x / √(mean(x²) + ε) · γ"
    ),
    "you divided by the standard deviation; RMSNorm divides by the root of the mean of the squares, "
    "√(mean(x²) + ε), which does not subtract the mean": (
        "你除以了标准差；RMSNorm 除以的是平方的均值再开方，√(mean(x²) + ε)，它不减去均值"
    ),
    "ε belongs inside the square root, √(mean(x²) + ε), not √mean(x²) + ε: it matters for rows with a tiny spread": (
        "ε 应放在平方根里面，√(mean(x²) + ε)，而不是 √mean(x²) + ε：对取值几乎不分散的行，这一点很关键"
    ),
    "you divided by mean(x²) + ε; take its square root": "你除以了 mean(x²) + ε；要先开平方",
    "you summed the squares; RMSNorm takes their mean over the last dimension": (
        "你对平方求了和；RMSNorm 在最后一个维度上取的是它们的均值"
    ),
    "you normalised over the batch (dim 0); normalise each row over its last dimension (dim=-1)": (
        "你在批次维（dim 0）上做了归一化；应对每一行在最后一个维度（dim=-1）上归一化"
    ),
    "the scaling is right but the gain γ is missing: multiply by gamma": "缩放是对的，但少了增益 γ：要乘以 gamma",
    "rms_norm(x, gamma, 1e-5) for x of shape {shape}": "x 的形状为 {shape} 时的 rms_norm(x, gamma, 1e-5)",
    "equals F.rms_norm, also on rows with a tiny spread": "与 F.rms_norm 一致，对取值几乎不分散的行也一样",
    "line 4 is right: nn.LayerNorm(d_model) normalises each position's d_model features": (
        "第 4 行是对的：nn.LayerNorm(d_model) 对每个位置的 d_model 个特征做归一化"
    ),
    "line 5 is right: one nn.Dropout module, used on the sub-layer's output": (
        "第 5 行是对的：一个 nn.Dropout 模块，用在子层的输出上"
    ),
    "line 9 is right: norm_first=True is pre-LN, False the paper's post-LN": (
        "第 9 行是对的：norm_first=True 是 pre-LN，False 是论文的 post-LN"
    ),
    "one bug is still hidden in the pre-LN branch: what does the residual path carry around the sub-layer?": (
        "pre-LN 分支里还有一个 bug 没找到：残差通路绕过子层传递的是什么？"
    ),
    "one bug is still hidden in the post-LN branch: what does the paper drop out? 'the output of each sub-layer, "
    "before it is added to the sub-layer input' (§5.4). Compare the two in training mode": (
        "post-LN 分支里还有一个 bug 没找到：论文对什么做 dropout？"
        "'the output of each sub-layer, before it is added to the sub-layer input'（§5.4，"
        "译：每个子层的输出，在它与子层输入相加之前）。在训练模式下比较两者"
    ),
    "not done yet: set bug_lines to the numbers of the wrong lines, e.g. [1, 5]": (
        "还没有完成：把 bug_lines 设为出错的行号，例如 [1, 5]"
    ),
    "bug_lines should be a list (or tuple, or set) of line numbers, got {type}": (
        "bug_lines 应是行号组成的列表（或元组、集合），实际得到 {type}"
    ),
    "each line number": "每个行号",
    "BuggyResidualConnection has lines 1–11 (print_numbered shows them), got {outside}": (
        "BuggyResidualConnection 只有第 1–11 行（print_numbered 会显示它们），实际得到 {outside}"
    ),
    "line {n} is right: it only sets the class up": "第 {n} 行是对的：它只是在搭建这个类",
    "find the bugs": "找 bug",
    "passed: line 10 (the residual is x) and line 11 (drop the sub-layer only)": (
        "通过：第 10 行（残差是 x）和第 11 行（只对子层做 dropout）"
    ),
    "counts γ only: each LayerNorm has a gain γ and a bias β, d_model numbers each": (
        "只算了 γ：每个层归一化都有增益 γ 和偏置 β，各 d_model 个数"
    ),
    "gives each decoder layer two LayerNorms; it has three sub-layers (self-attention, cross-attention, "
    "feed-forward), each in its own Add & Norm": (
        "给每个解码器层只算了两个层归一化；它有三个子层（自注意力、交叉注意力、前馈网络），各有自己的 Add & Norm"
    ),
    "counts the encoder only; the decoder has its LayerNorms too": "只算了编码器；解码器也有自己的层归一化",
    "leaves out the final LayerNorm of each pre-LN stack (section 4)": "漏了每个 pre-LN 栈末尾的层归一化（第 4 节）",
    "has one final LayerNorm; each stack, encoder and decoder, ends with one": (
        "只算了一个末尾的层归一化；编码器和解码器两个栈的末尾各有一个"
    ),
    "adds final LayerNorms to the paper's post-LN model; its last Add & Norm already normalises, so only pre-LN "
    "stacks need one": (
        "给论文的 post-LN 模型加上了末尾的层归一化；它最后一个 Add & Norm 已经做了归一化，只有 pre-LN 的栈才需要"
    ),
    "count the Add & Norm boxes first": "先数一数 Add & Norm 方框",
    "{what} = {got}, expected {want}: {hint}": "{what} = {got}，应为 {want}：{hint}",
    "LayerNorm parameters": "层归一化的参数",
    "passed: (5N, + 2 for pre-LN) LayerNorms × 2·d_model": "通过：（5N 个，pre-LN 再加 2 个）层归一化 × 2·d_model",
    "each token is normalised on its own: no dependence on the batch or its padding, and training = inference": (
        "每个词元各自归一化：不依赖批次及其填充，训练和推理时的计算完全一样"
    ),
    "(a): speed is not the reason; section 1's point is what each normalises over": (
        "(a)：原因不在速度；第 1 节讲的是两者各在什么上做归一化"
    ),
    "(c): BatchNorm has a learned γ and β too (and running averages besides)": (
        "(c)：BatchNorm 也有可学习的 γ 和 β（另外还有滑动平均）"
    ),
    "(d): both have 2 · features parameters": "(d)：两者都有 2 · features 个参数",
    "post-LN starts with large gradients near the output, so full-size steps there are too big": (
        "post-LN 一开始在靠近输出的层梯度很大，所以在那里迈全步长太大了"
    ),
    "(b): section 5's plot shows the opposite for post-LN: the layers near the input get the smaller gradients": (
        "(b)：第 5 节的图显示 post-LN 正好相反：靠近输入的层梯度更小"
    ),
    "(c): warmup is about the first steps of optimisation; over-fitting is what dropout and label smoothing "
    "address": "(c)：预热针对的是优化的最初几步；过拟合要靠 dropout 和标签平滑来应对",
    "(d): masks are notebook 01's business; warmup does not change them": "(d)：掩码是笔记本 01 的内容；预热不会改变它们",
    "question 1 (LayerNorm or BatchNorm)": "问题 1（层归一化还是 BatchNorm）",
    "question 2 (warmup)": "问题 2（预热）",
}
