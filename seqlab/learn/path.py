"""The learning path: the course's steps in order, each with what to read, what to look at and what to do.

A step's ``do`` is an Implement exercise (``implement``), a Trace question (``trace``), an Explain or
Derive card (``card``) or a command to run followed by a question (``command``). Titles and texts
are (English, 中文) pairs, with the explorer glossary's terms. ``look`` is the explorer widget's
anchor (``seqlab explore``, then ``#w-...``).

The path falls into parts (:data:`PARTS`: recurrence, gated cells, attention, the Transformer LM,
training, seq2seq), each a run of consecutive steps; the notebooks (``seqlab learn notebook``) and
the explorer group the steps by them.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Step:
    id: str                       # the exercise, question or card name
    kind: str                     # implement | trace | card | command
    title: tuple[str, str]
    read: tuple[str, str]
    look: str = ""                # explorer anchor
    command: str = ""             # for kind "command": what to run first
    then: str = ""                # for kind "command": the trace question or card to answer after it


def _s(id, kind, title, read, look="", command="", then=""):
    return Step(id, kind, title, read, look, command, then)


STEPS: tuple[Step, ...] = (
    _s("trace_recurrence", "trace", ("The recurrence", "循环递推"),
       ("A recurrent neural network (RNN) keeps a hidden state h_t = tanh(a h_{t-1} + x_t): each step reads the "
        "previous state and the current input.",
        "循环神经网络用隐藏状态 h_t = tanh(a h_{t-1} + x_t) 记住过去：每一步读取上一个隐藏状态和当前输入。"), "w-recurrence"),
    _s("scalar_recurrence", "implement", ("Implement the recurrence", "实现循环递推"),
       ("Write the loop over time steps that produces h_1..h_T.", "写出按时间步循环、产生 h_1..h_T 的代码。"), "w-recurrence"),
    _s("explain_order", "card", ("Order matters", "顺序很重要"),
       ("The state depends on the order of the inputs.", "隐藏状态取决于输入的顺序。"), "w-recurrence"),
    _s("rnn_step", "implement", ("RNN forward: one step", "RNN 前向：一步"),
       ("With vectors: h = tanh(Wh h_prev + Wx x + b), column-vector convention.",
        "向量形式：h = tanh(Wh h_prev + Wx x + b)，列向量约定。"), "w-charlm"),
    _s("rnn_forward", "implement", ("RNN forward over a sequence", "RNN 对整个序列的前向传播"),
       ("The same weights at every step; the output y_t = Wy h_t + by is the language model's logits.",
        "每一步使用同一组权重；输出 y_t = Wy h_t + by 即语言模型的 logits。"), "w-charlm"),
    _s("softmax_cross_entropy", "implement", ("Cross-entropy loss", "交叉熵损失"),
       ("The loss of a language model: softmax over the classes of each row, mean negative log-probability of the target.",
        "语言模型的损失：对每行的类别做 softmax，取目标的负对数概率的平均。"), "w-charlm"),
    _s("trace_vanishing", "trace", ("Vanishing and exploding gradients", "梯度消失与梯度爆炸"),
       ("Through time the gradient is a product of one Jacobian factor per step.", "随时间反向传播时，梯度是每步一个雅可比因子的乘积。"),
       "w-gradient"),
    _s("scalar_recurrence_backward", "implement", ("Backward through the recurrence", "循环递推的反向传播"),
       ("The first BPTT (backpropagation through time): one number per step.", "第一个随时间反向传播：每一步一个数。"), "w-gradient"),
    _s("derive_bptt", "card", ("Derive BPTT", "推导随时间反向传播"),
       ("The local term and the term from the future.", "局部项与来自未来的项。"), "w-gradient"),
    _s("rnn_bptt", "implement", ("BPTT (full)", "完整的随时间反向传播"),
       ("Hand-written backward pass of the RNN, checked against central finite differences.",
        "手写 RNN 的反向传播，用中心差分检验。"), "w-gradient"),
    _s("truncated_bptt", "implement", ("Truncated BPTT", "截断的随时间反向传播"),
       ("Chunks carry the state's value forward but not its gradient back.", "分块传递隐藏状态的值，但不回传梯度。"), "tb-panel"),
    _s("trace_clipping", "trace", ("The clipping factor", "裁剪系数"),
       ("Gradient clipping against exploding gradients.", "用梯度裁剪应对梯度爆炸。"), "clip-panel"),
    _s("clip_global_norm", "implement", ("Global-norm clipping", "全局范数梯度裁剪"),
       ("One factor for every gradient, so the direction is kept.", "所有梯度乘同一个系数，方向保持不变。"), "clip-panel"),
    _s("explain_clipping", "card", ("Two clipping rules", "两种裁剪规则"),
       ("Global-norm against coordinate-wise clipping.", "全局范数裁剪与逐坐标裁剪。"), "clip-panel"),
    _s("trace_lstm_cell", "trace", ("The LSTM cell", "LSTM 单元"),
       ("LSTM (long short-term memory): forget gate, input gate, output gate and the cell state.",
        "长短期记忆：遗忘门、输入门、输出门和细胞状态。"), "w-lstm"),
    _s("lstm_cell_forward", "implement", ("Implement the LSTM cell", "实现 LSTM 单元"),
       ("Four affine maps stacked in the order i, f, g, o.", "四个仿射变换按 i, f, g, o 的顺序堆叠。"), "w-lstm"),
    _s("lstm_bptt", "implement", ("Backward through the LSTM", "LSTM 的反向传播"),
       ("Two paths from the future: through h and through the cell state.", "来自未来的两条路径：经过 h 和经过细胞状态。"), "w-lstm"),
    _s("explain_lstm_memory", "card", ("The memory path", "记忆通路"),
       ("Why the cell state keeps gradients alive.", "为什么细胞状态能让梯度保持。"), "w-lstm"),
    _s("trace_gru_mix", "trace", ("The GRU mix", "GRU 的插值"),
       ("GRU (gated recurrent unit): the update gate mixes the old state and the candidate.",
        "门控循环单元：更新门在旧状态与候选状态之间插值。"), "w-gru"),
    _s("gru_cell_forward", "implement", ("Implement the GRU cell", "实现 GRU 单元"),
       ("Reset gate, update gate, candidate; mind the convention.", "重置门、更新门、候选状态；注意约定。"), "w-gru"),
    _s("gru_bptt", "implement", ("Backward through the GRU", "GRU 的反向传播"),
       ("The same pattern as the LSTM with three maps.", "与 LSTM 相同的模式，三个仿射变换。"), "w-gru"),
    _s("stacked", "command", ("Stacked and bidirectional RNNs", "堆叠与双向循环神经网络"),
       ("Layers of RNNs, and a bidirectional RNN that reads the sequence both ways; the labs run them.",
        "多层 RNN，以及从两个方向读取序列的双向循环神经网络；实验会运行它们。"), "w-dependency",
       command="seqlab labs --only stacked --out labs_out", then="explain_bidirectional"),
    _s("trace_attention_weights", "trace", ("Attention weights", "注意力权重"),
       ("Attention: a query scores every key, a softmax turns scores into weights, the output averages the values.",
        "注意力：查询为每个键打分，softmax 把得分变成权重，输出是值的加权平均。"), "w-attention"),
    _s("attention", "implement", ("Scaled dot-product attention with masks", "带掩码的缩放点积注意力"),
       ("Scores / sqrt(d_k), masked scores to -inf, softmax over each row.", "得分除以 sqrt(d_k)，被掩码的得分设为 -inf，每行做 softmax。"),
       "w-attention"),
    _s("explain_scale", "card", ("Why 1/sqrt(d_k)", "为什么除以 sqrt(d_k)"),
       ("The scale keeps the softmax out of saturation.", "缩放让 softmax 不饱和。"), "w-attention"),
    _s("attention_backward", "implement", ("Backward through attention", "注意力的反向传播"),
       ("The softmax Jacobian, row by row.", "逐行的 softmax 雅可比矩阵。"), "w-attention"),
    _s("trace_causal_count", "trace", ("The causal mask", "因果掩码"),
       ("A language model's query may attend only to itself and the past.", "语言模型的查询只能关注自己和过去。"), "w-mask"),
    _s("causal_mask", "implement", ("Implement the causal mask", "实现因果掩码"),
       ("True where query i may attend key j, j <= i.", "当 j <= i 时查询 i 可以关注键 j，取 True。"), "w-mask"),
    _s("trace_head_shapes", "trace", ("Multi-head shapes", "多头形状"),
       ("Multi-head attention splits d_model into heads of width d_model / heads.", "多头注意力把 d_model 拆成宽度为 d_model / 头数 的注意力头。"),
       "w-multihead"),
    _s("multihead_attention", "implement", ("Split and merge heads", "拆分与合并注意力头"),
       ("Contiguous column blocks, one per head, concatenated back in order.", "每个头一个连续的列块，按顺序拼接回去。"), "w-multihead"),
    _s("choose_merge", "implement", ("One BPE merge step", "BPE 合并的一步"),
       ("Byte pair encoding (BPE): merge the most frequent pair; ties go to the greater pair of bytes.",
        "字节对编码：合并出现最多的一对；并列时取字节序更大的一对。"), "w-bpe"),
    _s("train_bpe", "implement", ("Train a BPE tokenizer", "训练 BPE 分词器"),
       ("Split on special tokens, pre-tokenize, count, merge.", "按特殊词元切分、预分词、计数、合并。"), "w-bpe"),
    _s("softmax", "implement", ("LM components: softmax (PyTorch)", "语言模型组件：softmax（PyTorch）"),
       ("From here on the components of the Transformer LM in PyTorch, without torch.nn.functional.",
        "从这里开始是 Transformer 语言模型的 PyTorch 组件，不用 torch.nn.functional。"), "w-model"),
    _s("rms_norm", "implement", ("LM components: RMSNorm", "语言模型组件：RMSNorm"),
       ("Root-mean-square normalization with the epsilon inside the root.", "均方根归一化，epsilon 在根号内。"), "w-model"),
    _s("swiglu", "implement", ("LM components: SwiGLU", "语言模型组件：SwiGLU"),
       ("The feed-forward layer: a SiLU-gated linear unit.", "前馈层：以 SiLU 门控的线性单元。"), "w-model"),
    _s("rotate_pairs", "implement", ("LM components: RoPE", "语言模型组件：旋转位置编码"),
       ("Rotary positional encoding rotates adjacent pairs by position-dependent angles.",
        "旋转位置编码按与位置相关的角度旋转相邻的分量对。"), "w-model"),
    _s("scaled_dot_product_attention", "implement", ("LM components: scaled dot-product attention", "语言模型组件：缩放点积注意力"),
       ("Batched over any leading dimensions, with a boolean mask.", "在任意前导维度上批量计算，带布尔掩码。"), "w-model"),
    _s("causal_multihead_self_attention", "implement", ("LM components: causal multi-head attention",
                                                          "语言模型组件：因果多头注意力"),
       ("The LM's attention layer: projections, heads as a view, a causal mask, the output projection.",
        "语言模型的注意力层：投影、以视图拆分注意力头、因果掩码、输出投影。"), "w-model"),
    _s("transformer_block", "implement", ("LM components: the Transformer block", "语言模型组件：Transformer 块"),
       ("Pre-norm residual sublayers: x + attention(RMSNorm(x)), then z + SwiGLU(RMSNorm(z)), RoPE inside the attention.",
        "前置归一化的残差子层：x + 注意力(RMSNorm(x))，再 z + SwiGLU(RMSNorm(z))，注意力内部使用旋转位置编码。"), "w-model"),
    _s("transformer_lm", "implement", ("LM components: the Transformer LM", "语言模型组件：Transformer 语言模型"),
       ("Token embeddings, a stack of blocks, the final RMSNorm and the output layer: ids in, logits out.",
        "词元嵌入、堆叠的 Transformer 块、最后的 RMSNorm 和输出层：输入词元 id，输出 logits。"), "w-model"),
    _s("cross_entropy", "implement", ("LM components: cross-entropy", "语言模型组件：交叉熵"),
       ("The cross-entropy loss over every position, with log-sum-exp.", "对所有位置求交叉熵损失，使用 log-sum-exp。"), "w-model"),
    _s("lr_cosine_schedule", "implement", ("The cosine schedule", "余弦学习率调度"),
       ("Linear warm-up, then half a cosine from the maximum learning rate to the minimum.",
        "线性预热，然后用半个余弦从最大学习率降到最小学习率。"), "w-model"),
    _s("adamw_step", "implement", ("One AdamW step", "AdamW 的一步"),
       ("Adam's moments with bias correction, and weight decay on the parameter itself (decoupled).",
        "带偏差修正的 Adam 动量，以及直接作用于参数的（解耦）权重衰减。"), "w-model"),
    _s("get_batch", "implement", ("Training batches", "训练批次"),
       ("Random windows of the token array; the targets are the inputs shifted by one.", "从词元数组中随机取窗口；目标是输入右移一位。"),
       "w-model"),
    _s("train_small", "command", ("Train a small model", "训练一个小模型"),
       ("The whole chain on built-in stories: BPE, data, a small Transformer LM, evaluation, a sampled story.",
        "在内置故事上走完整个流程：BPE、数据、小型 Transformer 语言模型、评估、采样一个故事。"), "w-model",
       command="seqlab demo --fast --out demo_out", then="trace_perplexity"),
    _s("seq2seq", "command", ("Seq2seq with and without attention", "带与不带注意力的 seq2seq"),
       ("An encoder-decoder RNN on the dates task, without attention (one final state) and with attention.",
        "在日期任务上训练编码器-解码器 RNN：不带注意力（一个最终状态）与带注意力。"), "w-translate",
       command="seqlab seq2seq train --task dates --arch rnn-attention --max-steps 200 --out runs/dates",
       then="explain_bottleneck"),
    _s("paths", "command", ("Information paths", "信息路径"),
       ("The three architectures at equal size on copy, reverse and dates: accuracy against length.",
        "三种架构在同等规模下完成复制、反转和日期任务：准确率随长度的变化。"), "w-paths",
       command="seqlab paths --fast --out paths_out", then="explain_bottleneck"),
)

STEP_BY_ID = {s.id: s for s in STEPS}


@dataclasses.dataclass(frozen=True)
class Part:
    """A run of consecutive steps, from ``first`` to the step before the next part's first."""
    id: str
    title: tuple[str, str]
    first: str

    @property
    def steps(self) -> tuple[Step, ...]:
        return _PART_STEPS[self.id]


PARTS: tuple[Part, ...] = (
    Part("recurrence", ("Recurrence and backpropagation through time", "循环与随时间反向传播"), "trace_recurrence"),
    Part("gated", ("Gated cells: LSTM and GRU", "门控单元：长短期记忆与门控循环单元"), "trace_lstm_cell"),
    Part("attention", ("Attention", "注意力"), "trace_attention_weights"),
    Part("transformer", ("The Transformer LM", "Transformer 语言模型"), "choose_merge"),
    Part("training", ("Training", "训练"), "cross_entropy"),
    Part("seq2seq", ("Seq2seq and information paths", "seq2seq 与信息路径"), "seq2seq"),
)
PART_BY_ID = {p.id: p for p in PARTS}


def _part_steps() -> dict[str, tuple[Step, ...]]:
    starts = [next(k for k, s in enumerate(STEPS) if s.id == p.first) for p in PARTS]
    ends = starts[1:] + [len(STEPS)]
    return {p.id: STEPS[a:b] for p, a, b in zip(PARTS, starts, ends)}


_PART_STEPS = _part_steps()
PART_OF = {s.id: p for p in PARTS for s in p.steps}
