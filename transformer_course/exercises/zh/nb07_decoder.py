"""中文: the checkers of notebook 07 (transformer_course/exercises/nb07_decoder.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "run section 5's causality test on it: no earlier output moves when a later target token changes": (
        "用第 5 节的因果性测试检查它：改变后面的目标词元时，前面的输出一个都不动"
    ),
    "append <pad> tokens to the source (with the padding mask): the decoder's outputs stay the same, so "
    "cross-attention does hide the source <pad>": (
        "在源序列后面添上 <pad> 词元（并带上填充掩码）：解码器的输出不变，所以交叉注意力确实遮住了源序列的 <pad>"
    ),
    "change one word of the source: the decoder's outputs change, so cross-attention does read the memory": (
        "改掉源序列中的一个词：解码器的输出变了，所以交叉注意力确实读了 memory"
    ),
    "model.generator.proj.weight is model.tgt_embed.lut.weight gives True: the weights are tied": (
        "model.generator.proj.weight is model.tgt_embed.lut.weight 的结果是 True：权重是共享的"
    ),
    "{name}: no answer yet": "{name}：还没有作答",
    "{name} is not ({letter}): {hint}": "{name} 不是 ({letter})：{hint}",
    "find the bug": "找 bug",
    "model 1's self-attention ignores tgt_mask (the future leaks); model 2's cross-attention ignores src_mask": (
        "模型 1 的自注意力忽略了 tgt_mask（未来的信息泄露了）；模型 2 的交叉注意力忽略了 src_mask"
    ),
    "the generator has a bias, one number per target word": "生成器（generator）有偏置，每个目标词一个数",
    "each decoder layer has a second attention (cross-attention over the memory) with its own LayerNorm": (
        "每个解码器层还有第二个注意力（对 memory 的交叉注意力），它有自己的层归一化"
    ),
    "the decoder layer has three LayerNorms (one per sub-layer), the encoder layer two": (
        "解码器层有三个层归一化（每个子层一个），编码器层有两个"
    ),
    "the two positional encodings are fixed tables (buffers), not parameters": (
        "两个位置编码是固定的表（缓冲区），不是参数"
    ),
    "with tie_embeddings={tie!r} shared matrices count once; you counted them again": (
        "tie_embeddings={tie!r} 时，共享的矩阵只算一次；你重复算了"
    ),
    "'decoder' ties the target embedding and the generator only; the source embedding is its own": (
        "'decoder' 只让目标嵌入和生成器共享权重；源嵌入是独立的"
    ),
    "with 'none' the generator's weight is its own (tgt_vocab × d_model) matrix too": (
        "取 'none' 时，生成器的权重也是一个独立的 (tgt_vocab × d_model) 矩阵"
    ),
    "{what} = {got:,}, expected {want:,}: {hint}": "{what} = {got:,}，应为 {want:,}：{hint}",
    "{what} = {got:,}, expected {want:,}: layers as in section 6, then the embedding matrices (count a tied one "
    "once) and the generator's bias": (
        "{what} = {got:,}，应为 {want:,}：先按第 6 节数各层，再加上嵌入矩阵（共享的只算一次）和生成器的偏置"
    ),
    "matches count_parameters(make_model(...)) with every kind of tying": (
        "每种权重共享方式下都与 count_parameters(make_model(...)) 一致"
    ),
    "log 1 = 0 where attending is allowed and log 0 = −∞ where it is not: the float mask nn.Transformer adds": (
        "允许注意的位置 log 1 = 0，不允许的位置 log 0 = −∞：这正是 nn.Transformer 加到分数上的浮点掩码"
    ),
    "a float mask is ADDED to the scores: +1 where allowed and +0 where blocked hides nothing": (
        "浮点掩码是“加”到分数上的：允许处 +1、禁止处 +0，什么也遮不住"
    ),
    "a float mask is added: +1 on the blocked (future) keys nudges attention towards them instead of hiding them": (
        "浮点掩码是加上去的：在被禁止的（未来的）键上 +1，反而把注意力往它们那边推，而不是把它们遮住"
    ),
    "−1 on the allowed keys and 0 on the blocked ones only shifts scores a little; nothing is hidden": (
        "允许的键 −1、禁止的键 0，只是把分数稍微挪了一点；什么也没遮住"
    ),
    "batch_first=False is the default: dimension 0 is the sequence, dimension 1 the batch": (
        "默认 batch_first=False：第 0 维是序列，第 1 维是批次"
    ),
    "that is what batch_first=True reads; nn.Transformer() defaults to batch_first=False, sequence first": (
        "那是 batch_first=True 时的读法；nn.Transformer() 默认 batch_first=False，序列维在前"
    ),
    "no error: (32, 10, 512) is a valid (sequence, batch, d_model) tensor too, which is why the mistake is silent": (
        "不会报错：(32, 10, 512) 也是一个合法的 (sequence, batch, d_model) 张量，所以这个错误悄无声息"
    ),
    "decoder input tgt[:-1] = <s> a b c d and labels tgt[1:] = a b c d </s>: 5 positions": (
        "解码器输入 tgt[:-1] = <s> a b c d，标签 tgt[1:] = a b c d </s>：5 个位置"
    ),
    "the decoder input drops the last token (</s> is never an input) and the labels drop <s>: one fewer than the "
    "6 tokens": "解码器输入去掉最后一个词元（</s> 从不作为输入），标签去掉 <s>：比 6 个词元少一个",
    "one token goes from each end, but of two different copies: input tgt[:-1] and labels tgt[1:] are 5 long each": (
        "两端各去掉一个词元，但去掉的是两份不同的副本：输入 tgt[:-1] 和标签 tgt[1:] 各长 5"
    ),
    "write the decoder input and the labels under each other and count the positions": (
        "把解码器输入和标签上下对齐写出来，再数位置"
    ),
}
