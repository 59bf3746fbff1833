"""中文: the checkers of notebook 00 (transformer_course/exercises/nb00_introduction.py)."""

__all__ = ["ZH"]

ZH: dict[str, str] = {
    "only the attention core is counted: the four projections W^Q, W^K, W^V, W^O cost n·d² each": (
        "只算了注意力的核心部分：四个投影 W^Q、W^K、W^V、W^O 各要 n·d² 次乘加"
    ),
    "the product weights @ V is missing: it costs as much as Q Kᵀ (n·n weights, each times d numbers)": (
        "漏了乘积 weights @ V：它和 Q Kᵀ 一样贵（n·n 个权重，每个乘 d 个数）"
    ),
    "one projection is missing: there are four, W^Q, W^K, W^V and the output projection W^O": (
        "少了一个投影：一共有四个，W^Q、W^K、W^V 和输出投影 W^O"
    ),
    "the count grows with the number of heads: h heads of size d/h cost what one head of size d costs": (
        "你的结果随头数增长：h 个大小为 d/h 的头，开销和一个大小为 d 的头相同"
    ),
    "these are Table 1's two terms only (n²·d + n·d²); count every matrix product of the layer": (
        "这只是表 1 的两项（n²·d + n·d²）；请把这一层的每个矩阵乘法都算上"
    ),
    "{what} = {got:,}: {hint}": "{what} = {got:,}：{hint}",
    "{what} = {got:,}, PyTorch's FlopCounterMode counts {want:,} multiply-adds": (
        "{what} = {got:,}，而 PyTorch 的 FlopCounterMode 数出 {want:,} 次乘加"
    ),
    "attention layer cost": "注意力层的开销",
    "passed: 4·n·d² for the projections + 2·n²·d for attention, whatever h is": (
        "通过：投影 4·n·d² + 注意力 2·n²·d，与 h 无关"
    ),
    "one layer short: with dilations 1, k, k², … the receptive field after L layers is k^L, and it must reach n "
    "(round up, not down)": "少了一层：空洞率为 1, k, k², … 时，L 层之后的感受野是 k^L，它必须覆盖 n（向上取整，而不是向下）",
    "that is log base 2: the receptive field multiplies by the kernel width k each layer": (
        "这是以 2 为底的对数：感受野每层乘以卷积核宽度 k"
    ),
    "math.log(n, k) is a float: for n = k^L it can come out a hair above L (math.log(125, 5) = 3.0000000000000004), "
    "so rounding up adds a layer; count with whole numbers (k ** L < n)": (
        "math.log(n, k) 是浮点数：当 n = k^L 时它可能比 L 大一丝（math.log(125, 5) = 3.0000000000000004），"
        "向上取整就多出一层；请用整数来数（k ** L < n）"
    ),
    "that is n / k rounded up, the O(n/k) of §4 taken literally: a kernel of width k reaches k − 1 positions back "
    "per layer, and the distance from first to last is n − 1": (
        "这是 n / k 向上取整，把 §4 的 O(n/k) 照字面算了：宽度为 k 的卷积核每层向前够到 k − 1 个位置，"
        "而第一个位置到最后一个位置的距离是 n − 1"
    ),
    "one layer short: round the number of layers up": "少了一层：层数要向上取整",
    "with n / (k − 1) you count n steps; the distance from the first to the last position is n − 1": (
        "用 n / (k − 1) 算的是 n 步；而第一个位置到最后一个位置的距离是 n − 1"
    ),
    "{what} = {got}: {hint}": "{what} = {got}：{hint}",
    "{what} = {got}; stacking the layers one by one needs {want}": "{what} = {got}；一层一层叠上去需要 {want} 层",
    "layers to connect": "连通所需的层数",
    "passed: ⌈(n − 1)/(k − 1)⌉ contiguous layers, ⌈log_k n⌉ dilated ones": (
        "通过：普通卷积 ⌈(n − 1)/(k − 1)⌉ 层，空洞卷积 ⌈log_k n⌉ 层"
    ),
    "training sees the whole target at once (O(1) sequential steps); generating a translation still needs one "
    "decoder step per output word (notebook 09)": (
        "训练时一次就能看到整个目标序列（O(1) 个顺序步骤）；生成译文时，每输出一个词仍要解码器走一步（笔记本 09）"
    ),
    "at test time the next word depends on the words already written, so they cannot all be produced in one step; "
    "Table 1's O(1) is about one layer over a known sequence": (
        "测试时下一个词取决于已经写出的词，所以不能一步全部生成；表 1 的 O(1) 说的是一层作用在一个已知序列上"
    ),
    "the encoder reads the whole source in one step; only the output is written word by word": (
        "编码器一步读完整个源序列；只有输出是逐词写出的"
    ),
    "upside down: the recurrent layer costs n·d², self-attention n²·d; divide the first by the second": (
        "除反了：循环层的开销是 n·d²，自注意力是 n²·d；用前者除以后者"
    ),
    "divide Table 1's recurrent cost n·d² by the self-attention cost n²·d, then put in n and d": (
        "用表 1 中循环层的开销 n·d² 除以自注意力的开销 n²·d，再代入 n 和 d"
    ),
    "12 h × 3,600 s × 8 GPUs × 9.5·10¹² FLOP/s ≈ 3.3·10¹⁸ FLOPs, Table 2's figure": (
        "12 h × 3,600 s × 8 块 GPU × 9.5·10¹² FLOP/s ≈ 3.3·10¹⁸ FLOPs，正是表 2 的数字"
    ),
    "the hours must become seconds (× 3,600): FLOPS are operations per second": (
        "小时要换算成秒（× 3,600）：FLOPS 是每秒的运算次数"
    ),
    "all 8 GPUs worked for those 12 hours: multiply by 8": "8 块 GPU 都工作了这 12 小时：要乘以 8",
    "a TFLOPS is 10¹² operations per second, not 10⁹": "1 TFLOPS 是每秒 10¹² 次运算，不是 10⁹",
    "multiply the training time in seconds, the number of GPUs and 9.5·10¹² FLOP/s per GPU": (
        "把以秒计的训练时间、GPU 块数和每块 GPU 的 9.5·10¹² FLOP/s 乘起来"
    ),
}
