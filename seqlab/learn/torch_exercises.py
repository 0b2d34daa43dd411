"""The Implement exercises of the Transformer LM's components, in PyTorch, checked against seqlab's own.

Each docstring is a contract and each of its sentences a check (a ``Spec``): a version that ignores a
sentence fails that check. Inputs are float64 unless a sentence is about another dtype, so the reference
and the student's code agree to 1e-6 unless one of them is wrong. The rules ("no torch.nn.functional",
"no loop over heads or positions") are enforced in the child process by seqlab.learn.child.rules; the
catalogued mistakes (mutants in seqlab.learn.torch_mistakes, recognisers here) name what a failure means.
"""

from __future__ import annotations

import math
import textwrap

from seqlab.learn import compare
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Exercise, Mistake, Spec, numbered_cases, same_dtypes, same_values, shared_mistake
from seqlab.learn.references import reference

_IMPORTS = "import math\n\nimport torch"
FLOAT32 = "float32 in, float32 out"
_F, _LAYERS, _OPTIM = "no torch.nn.functional", "no torch.nn layers", "no torch.optim"
_SOFTMAX_RULE = "no torch.softmax or Tensor.softmax (nor their log_softmax)"


def _rule(*forbidden: str) -> str:
    """The rules sentence of a stub, wrapped to the docstring's width."""
    return textwrap.fill("Write it with tensor operations only: " + ", ".join(forbidden) + ".", width=108,
                         subsequent_indent="    ")


def _ref(name):
    return lambda: reference(name)


def _mutant(name):
    """A mistake of seqlab.learn.torch_mistakes, imported (with torch) only when it is run: the
    command's own process imports torch while the child runs the student's code, not before."""
    def implementation(*args, **kwargs):
        from seqlab.learn import torch_mistakes
        return getattr(torch_mistakes, name)(*args, **kwargs)
    implementation.__name__ = name
    return implementation


def _mistake(name, title, explanation, zh=("", ""), why=("", ""), *, implementation=True, recognise=None,
             convention=None, accepted=False):
    """The Mistake EXERCISE__ID: its mutant in torch_mistakes (unless implementation=False) and/or a recogniser."""
    return Mistake(name.split("__", 1)[1], title, explanation, _mutant(name) if implementation else None,
                   recognise, zh[0], zh[1], why, convention, accepted)


def _torch_exercise(*fields, imports=_IMPORTS, **options):
    """An Exercise on tensors: its stub imports torch, and its check may take 30 s (the child imports torch)."""
    return Exercise(*fields, imports=imports, kind="torch", time_limit=30.0, **options)


def _gen(seed):
    import torch
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed, scale=1.0):
    import torch
    return torch.randn(*shape, generator=_gen(seed), dtype=torch.float64) * scale


def _tensor(data, dtype="float64"):
    import torch
    return torch.tensor(data, dtype=getattr(torch, dtype))


def _f32(*values):
    """float32 copies of the tensors among ``values`` (dicts of tensors too); the rest as they are."""
    import torch
    if len(values) == 1 and isinstance(values[0], dict):
        return {k: _f32(v)[0] for k, v in values[0].items()}
    return tuple(v.to(torch.float32) if torch.is_tensor(v) and v.is_floating_point() else v for v in values)


# --- checks shared by the exercises ------------------------------------------------------------------------------
def _tensors(value, name="output"):
    if isinstance(value, (tuple, list)):
        return [(f"{name}[{i}]", v) for i, v in enumerate(value)]
    return [(name, value)]


def _dtype(t) -> str:
    return str(t.dtype).replace("torch.", "")


_SAME_DTYPES, _SAME_VALUES = same_dtypes(), same_values()


def same_dtype_and_values(case, out, ref, extra) -> str | None:
    """A verify: the output has the reference's dtypes (here the input's float32, or int64) and its values,
    float32 ones to float32's precision (seqlab.learn.compare.tolerance)."""
    return _SAME_DTYPES(case, out, ref, extra) or _SAME_VALUES(case, out, ref, extra)


GROWN = "(4 times as many)"


def ops_do_not_grow(case, out, ref, extra) -> str | None:
    """A verify: on a case labelled "N heads (4 times as many)" (or positions), the call dispatched no more
    tensor operations than the call just before it, the same inputs with a quarter of them (rules.call's
    extra["ops_before"])."""
    if not case.label.endswith(GROWN) or extra.get("ops") is None or extra.get("ops_before") is None:
        return None
    if extra["ops"] <= extra["ops_before"]:
        return None
    what = case.label.split()[1]
    return (f"{extra['ops']} tensor operations against {extra['ops_before']} with a quarter of the {what}: the count "
            f"grows with the {what}, so the code loops over them in Python. Batch them: the heads are one dimension "
            "of a tensor (..., heads, seq, w), and every position goes through the same matmul")


# --- recognisers shared by the exercises ---------------------------------------------------------------------
def non_finite_on(spec_id: str, what: str) -> D.Recogniser:
    """Fits when the sentence ``spec_id`` failed and the student's output holds NaN or inf on one of its
    cases where the reference is finite; says which case, where, and ``what`` it means."""
    def recognise(ev) -> str | None:
        if spec_id not in ev.failed:
            return None
        import numpy as np
        for i, case in enumerate(ev.cases):
            if case.spec != spec_id or ev.raw[i] is None or not isinstance(ev.expected[i], type(ev.raw[i])):
                continue
            for (name, out), (_, ref) in zip(_tensors(ev.raw[i]), _tensors(ev.expected[i])):
                try:
                    a, e = D.array(out), D.array(ref)
                except Exception:  # noqa: BLE001 - not an array
                    continue
                if a.shape == e.shape and a.dtype.kind == "f" and not np.isfinite(a).all() and np.isfinite(e).all():
                    return f"{name} {D.relation(e, a)} on {case.label}: {what}"
        return None
    return recognise


def matches_any(*names: str, text: str = "") -> D.Recogniser:
    """Fits when one of the mutants ``names`` gives the student's values wherever the student is wrong."""
    return D.any_of(*(D.matches(_mutant(n), text=text) for n in names))


def matches_where_finite(name: str) -> D.Recogniser:
    """Fits when the mutant ``name`` gives the student's values wherever the student's are finite, on every
    wrong case: the same mistake, with NaN where a row was left with no visible key (the mutant gives 0)."""
    formula = _mutant(name)

    def recognise(ev) -> str | None:
        import numpy as np
        theirs = ev.implementation_outputs(formula)
        seen = []
        for i in ev.usable("all"):
            if not ev.wrong(i, ()) or theirs[i] is None:
                continue
            a, e = D.array(ev.outputs[i]), D.array(theirs[i])
            rtol, atol = compare.tolerance(ev.outputs[i], theirs[i], ev.rtol, ev.atol)
            finite = np.isfinite(a)
            if a.shape != e.shape or not finite.any() or not np.allclose(a[finite], e[finite], rtol=rtol, atol=atol):
                return None
            seen.append(ev.cases[i].label + ("" if finite.all() else " (NaN where no key is left)"))
        return ("the outputs are that mistake's on " + ", ".join(seen[:3])) if seen else None
    return recognise


def _sentence(exercise: str, spec_id: str, title, explanation, zh, why, recognise=None) -> Mistake:
    """The mistake "the sentence ``spec_id`` ignored", recognised by its failed check while the exercise's own
    cases are right (where they fail too, a deeper mistake is the likelier cause), by a wrong value or an error."""
    return _mistake(f"{exercise}__{spec_id.replace(' ', '_').replace('-', '_')}", title, explanation, zh, why,
                    implementation=False, recognise=recognise or D.failed_check(spec_id, raises=True))


def _dtype_mistake(exercise: str, what: str = "the input's") -> Mistake:
    return shared_mistake("dtype", D.failed_check("dtype", raises=True), mistake_id="dtype", what=what)


def _leading_dims_mistake(exercise: str) -> Mistake:
    return shared_mistake("leading_dims", D.failed_check("leading dims", raises=True), mistake_id="leading_dims")


# --- softmax ---------------------------------------------------------------------------------------------------
def _softmax_cases():
    return [Case("the worked example", (_tensor([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1001.0]]),)),
            Case("random inputs 1", (_randn(2, 3, 5, seed=1, scale=3),), {"dim": 1}),
            Case("random inputs 2", (_randn(4, 6, seed=2, scale=50),), {"dim": -1})]


def _softmax_invariants(case, out):
    import torch
    dim = case.kwargs.get("dim", -1)
    sums = out.sum(dim)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-9):
        return f"the probabilities along dim {dim} sum to {sums.flatten()[0].item():.6g}, not 1"
    return None


def _normalised_along_another_axis(ev) -> str | None:
    """The student's output sums to 1 along another axis than `dim`, on every case where it is wrong."""
    import numpy as np
    said = []
    for i in ev.usable("all"):
        if not ev.wrong(i, ()):
            continue
        a = D.array(ev.outputs[i])
        if a.ndim < 2 or not np.isfinite(a).all():
            return None
        dim = ev.cases[i].kwargs.get("dim", -1) % a.ndim
        axes = [k for k in range(a.ndim) if np.allclose(a.sum(k), 1.0, atol=1e-9)]
        if not axes or dim in axes:
            return None
        said.append(f"on {ev.cases[i].label} it sums to 1 along axis {axes[0]}, not along dim={dim}")
    return "; ".join(said[:2]) or None


def _normalised_over_everything(ev) -> str | None:
    import numpy as np
    for i in ev.usable("all"):
        a = D.array(ev.outputs[i])
        if ev.wrong(i, ()) and a.ndim >= 2 and np.isfinite(a).all() and abs(a.sum() - 1.0) < 1e-9:
            return f"on {ev.cases[i].label} the whole tensor sums to 1: right only for a single row"
    return None


SOFTMAX = _torch_exercise(
    "softmax", "Softmax (PyTorch)", "softmax（PyTorch）", "softmax(x, dim=-1)",
    """exp(x - max) / sum(exp(x - max)) along `dim`; x any shape -> the same shape.
    `dim` may be any axis, negative or not: dim=0 normalises each column of a matrix.
    Subtract the maximum along `dim` first, so logits of 1000 give no inf or NaN.
    The result has x's dtype: float32 in, float32 out.
    x is not changed.
    """ + _rule(_F, _SOFTMAX_RULE, _LAYERS),
    _ref("softmax"), _softmax_cases,
    (_mistake("softmax__wrong_axis", "softmax over the wrong axis",
              "normalize along the `dim` argument (the last axis by default), not along a fixed axis",
              ("softmax 的轴错了", "沿参数 `dim` 指定的轴归一化（默认最后一个轴），而不是固定的某个轴"),
              ("Each row of logits is one distribution: the probabilities of the classes for one position. Normalising "
               "along another axis mixes positions together, so each position's numbers no longer sum to 1 and the "
               "loss trains the wrong thing.",
               "每一行 logits 是一个分布：某个位置上各类别的概率。沿别的轴归一化会把不同位置混在一起，"
               "每个位置的概率和不再是 1，损失函数训练的就不是想要的东西。"),
              recognise=_normalised_along_another_axis),
     _mistake("softmax__max_not_subtracted", "the maximum is not subtracted",
              "exp(1000) overflows to inf and inf/inf is NaN: subtract x.amax(dim, keepdim=True) first",
              ("没有减去最大值", "exp(1000) 溢出为 inf，inf/inf 得 NaN：先减去 x.amax(dim, keepdim=True)"),
              ("softmax(x) = softmax(x - c) for any constant c, so subtracting the row's maximum changes nothing "
               "mathematically, but keeps every exp() at most 1. Without it a logit of 89 already overflows float32 "
               "and the whole row becomes NaN, which then spreads through the gradients.",
               "对任意常数 c 有 softmax(x) = softmax(x - c)，所以减去每行最大值在数学上不改变结果，却让每个 exp() 都不超过 1。"
               "不减的话，float32 中 logit 到 89 就会溢出，整行变成 NaN，并通过梯度扩散开。"),
              recognise=non_finite_on("large logits", "the maximum along `dim` is not subtracted before exp()")),
     _mistake("softmax__max_of_the_whole_tensor", "one maximum for the whole tensor, not one per row",
              "subtract each row's own maximum (x.amax(dim, keepdim=True)): with one maximum for all rows, a row far "
              "below it underflows to 0/0",
              ("整个张量只减一个最大值，而不是每行各减自己的", "减去每行自己的最大值 (x.amax(dim, keepdim=True))：若所有行共用一个最大值，远小于它的行会下溢成 0/0"),
              ("The shift must make each row's largest exp() exactly 1. One global maximum does that for one row "
               "only: a row whose values sit 800 below it has exp() = 0 everywhere, and 0/0 is NaN.",
               "平移的目的是让每一行最大的 exp() 恰好为 1。全局只减一个最大值只对一行做到这一点："
               "比它小 800 的那一行 exp() 全是 0，0/0 就是 NaN。")),
     _mistake("softmax__normalised_over_everything", "normalised over the whole tensor",
              "divide by the sum along `dim` (keepdim=True), not by the sum of every entry: right only for a single row",
              ("对整个张量归一化", "除以沿 `dim` 的和（keepdim=True），而不是所有元素的和：只有单行输入时才对"),
              ("A batch holds many distributions, one per row. Dividing by the sum of the whole tensor makes the whole "
               "batch sum to 1, so every probability shrinks with the batch size; a test with one row cannot see it.",
               "一个批次包含许多分布，每行一个。除以整个张量的和会让整个批次的和为 1，每个概率都随批大小变小；"
               "只用一行测试是看不出来的。"),
              recognise=_normalised_over_everything),
     _sentence("softmax", "any shape", "right only for some shapes",
               "work along `dim` whatever x's number of dimensions: x.amax(dim, keepdim=True), .sum(dim, keepdim=True)",
               ("只对某些形状正确", "无论 x 有几维，都沿 `dim` 计算：x.amax(dim, keepdim=True)、.sum(dim, keepdim=True)"),
               ("The same softmax runs on a vector of logits, a (batch, seq, vocab) tensor and (batch, heads, n, m) "
                "attention scores. keepdim=True keeps the reduced axis so the division broadcasts back on any shape.",
                "同一个 softmax 会用在 logits 向量、(batch, seq, vocab) 张量和 (batch, heads, n, m) 的注意力得分上。"
                "keepdim=True 保留被约简的轴，除法就能在任意形状上广播回去。")),
     _sentence("softmax", "dim", "the `dim` argument is not honoured",
               "normalise along the axis `dim` names, negative or not (dim=0: each column)",
               ("没有按参数 `dim` 计算", "沿 `dim` 指定的轴归一化，无论正负（dim=0：每一列）"),
               ("Attention normalises over the keys, a language model over the vocabulary, and either may be any axis "
                "of the tensor. A softmax that ignores `dim` and always uses the last axis is right only by luck.",
                "注意力对键归一化，语言模型对词表归一化，它们可能是张量的任何一个轴。"
                "忽略 `dim`、总用最后一个轴的 softmax 只是碰巧才对。")),
     _dtype_mistake("softmax")),
    returns="a tensor of x's shape", invariants=_softmax_invariants,
    spec=(Spec("values (random inputs)", "exp(x - max) / sum(exp(x - max)) along `dim`"),
          Spec("any shape", "x any shape -> the same shape.",
               lambda: [Case("a 1-D x", (_randn(5, seed=30),)),
                        Case("a 4-D x, dim=2", (_randn(2, 3, 4, 2, seed=31),), {"dim": 2})]),
          Spec("dim", "`dim` may be any axis, negative or not: dim=0 normalises each column of a matrix.",
               lambda: [Case("dim=0 on a matrix (each column)", (_randn(4, 3, seed=32),), {"dim": 0}),
                        Case("dim=-2 on a 3-D x", (_randn(2, 5, 3, seed=33),), {"dim": -2})]),
          Spec("large logits", "Subtract the maximum along `dim` first, so logits of 1000 give no inf or NaN.",
               lambda: [Case("logits of 1000", (_tensor([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -1001.0]]),)),
                        Case("rows of very different sizes", (_tensor([[0.0, 1.0, 2.0], [800.0, 801.0, 700.0]]),)),
                        Case("one logit of 1500", (_tensor([[0.0, 0.0, 1500.0], [3.0, 2.0, 1.0]]),))]),
          Spec("dtype", "The result has x's dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 x", _f32(_randn(3, 4, seed=34, scale=3))),
                        Case("float32 logits of 100, dim=0", _f32(_randn(2, 5, seed=35, scale=100)), {"dim": 0})],
               same_dtype_and_values),
          Spec("inputs unchanged", "x is not changed."),
          Spec("rules", _rule(_F, _SOFTMAX_RULE, _LAYERS))),
    rules={"forbid": ["functional", "softmax", "layers"]}, step="softmax")


# --- RMSNorm ---------------------------------------------------------------------------------------------------
def _rms_cases():
    return [Case("the worked example", (_tensor([[3.0, 4.0], [1e-3, -1e-3]]), _tensor([1.0, 2.0])), {"eps": 1e-5}),
            Case("random inputs 1", (_randn(2, 3, 8, seed=3), _randn(8, seed=4) + 1)),
            Case("random inputs 2 (small inputs)", (_randn(4, 6, seed=5, scale=1e-2), _randn(6, seed=6) + 1),
                 {"eps": 1e-3})]


def _rms_over_another_axis(ev) -> str | None:
    """The student's output is x / rms * weight with the mean of squares taken over another axis."""
    import torch
    said = None
    for i in ev.usable("all"):
        if not ev.wrong(i, ()):
            continue
        x, weight = ev.cases[i].args[:2]
        eps = ev.cases[i].kwargs.get("eps", 1e-5)
        found = [k for k in range(x.dim() - 1)
                 if D.close(x / (x.pow(2).mean(k, keepdim=True) + eps).sqrt() * weight, ev.outputs[i], ev.rtol, ev.atol)]
        if not found:
            return None
        said = said or f"on {ev.cases[i].label} the mean of x^2 is taken over axis {found[0]}, not the last (d)"
    return said


RMS_NORM = _torch_exercise(
    "rms_norm", "RMSNorm (PyTorch)", "RMSNorm（PyTorch）", "rms_norm(x, weight, eps=1e-5)",
    """x / sqrt(mean(x^2 over the last dim) + eps) * weight; x (..., d), weight (d,) -> (..., d).
    Any number of leading dims, none included: x (d,) works too.
    eps goes INSIDE the square root. [3, 4] with weight 1 -> [3, 4] / sqrt(12.5 + eps).
    Use the eps you are given (the default is 1e-5).
    The result has x's dtype: float32 in, float32 out.
    x and weight are not changed.
    """ + _rule(_F, "no torch.rms_norm", _LAYERS),
    _ref("rms_norm"), _rms_cases,
    (_mistake("rms_norm__eps_outside_the_root", "RMSNorm without the epsilon inside the root",
              "the formula is x / sqrt(mean(x^2) + eps); sqrt(mean(x^2)) + eps differs for small inputs",
              ("RMSNorm 的 epsilon 没有放在根号里", "公式是 x / sqrt(mean(x^2) + eps)；sqrt(mean(x^2)) + eps 对小的输入结果不同"),
              ("eps keeps the division finite when a row is (nearly) zero. Inside the root it bounds 1/rms by "
               "1/sqrt(eps); outside it bounds it by 1/eps, a thousand times larger for eps = 1e-6. The two agree for "
               "ordinary rows and part for small ones, where the trained weights then no longer fit.",
               "eps 让某行（几乎）为零时除法仍然有限。放在根号里，1/rms 的上界是 1/sqrt(eps)；放在外面则是 1/eps，"
               "eps = 1e-6 时大一千倍。两者对普通的行一致，对小的行不同，训练好的权重就对不上了。")),
     _mistake("rms_norm__mean_subtracted", "the mean is subtracted (that is LayerNorm)",
              "RMSNorm does not centre: divide x itself by its root mean square",
              ("减去了均值（那是 LayerNorm）", "RMSNorm 不做中心化：直接用 x 除以它的均方根"),
              ("LayerNorm subtracts the mean, then divides by the standard deviation; RMSNorm (Llama, this model) "
               "skips the centring and divides by the root mean square. Mixing them up gives a different function, "
               "and a checkpoint trained with one does not load into the other.",
               "LayerNorm 先减均值再除以标准差；RMSNorm（Llama 和本模型）不做中心化，直接除以均方根。"
               "两者混淆得到的是另一个函数，用一种训练的检查点无法用于另一种。")),
     _mistake("rms_norm__weight_missing", "the gain is not applied", "multiply the normalized x by weight (d,)",
              ("没有乘以增益", "把归一化后的 x 乘以 weight (d,)"),
              ("The normalisation fixes each row's scale to 1; the learned gain gives each feature its scale back. "
               "Without it the layer cannot learn which features matter more.",
               "归一化把每一行的尺度固定为 1；学到的增益再给每个特征恢复各自的尺度。"
               "没有它，这一层就学不到哪些特征更重要。")),
     _mistake("rms_norm__mean_over_every_dimension", "one root mean square for the whole tensor",
              "take the mean of x^2 over the last dim only (.mean(-1, keepdim=True)): each row (token) is normalised "
              "by its own size; right only for a single row",
              ("整个张量只算一个均方根", "只在最后一维上取 x^2 的均值 (.mean(-1, keepdim=True))：每一行（每个词元）用自己的大小归一化；只有一行时才对"),
              ("RMSNorm normalises each token's vector on its own, so a token's output does not depend on the other "
               "tokens in the batch. A mean over the whole tensor couples them: the same sentence gives different "
               "outputs in different batches.",
               "RMSNorm 对每个词元的向量单独归一化，一个词元的输出不依赖批次中的其他词元。"
               "对整个张量取均值会把它们耦合起来：同一句话在不同批次里得到不同的输出。")),
     _mistake("rms_norm__wrong_axis", "the mean over another axis than the last",
              "the mean of x^2 is over the features, the last dim: x.pow(2).mean(-1, keepdim=True)",
              ("在最后一维以外的轴上取均值", "x^2 的均值在特征维即最后一维上：x.pow(2).mean(-1, keepdim=True)"),
              ("The root mean square is the size of one token's feature vector, the last axis. Averaging over the "
               "positions or the batch mixes tokens together, and the result changes with the sequence length.",
               "均方根是一个词元特征向量的大小，即最后一个轴。在位置或批次上取平均会把词元混在一起，结果还随序列长度变化。"),
              implementation=False, recognise=_rms_over_another_axis),
     _mistake("rms_norm__eps_ignored", "the eps argument is ignored",
              "use the eps you are given: x.pow(2).mean(-1, keepdim=True) + eps, not a fixed 1e-5",
              ("忽略了参数 eps", "用传入的 eps：x.pow(2).mean(-1, keepdim=True) + eps，而不是固定的 1e-5"),
              ("Models set eps differently (1e-5, 1e-6, 1e-8): a checkpoint's norms were trained with its own eps, "
               "and a hard-coded one changes every small row's output.",
               "不同模型的 eps 各不相同（1e-5、1e-6、1e-8）：检查点的归一化层是用它自己的 eps 训练的，"
               "写死的 eps 会改变每个小行的输出。"),
              recognise=D.matches(_mutant("rms_norm__eps_ignored"))),
     _leading_dims_mistake("rms_norm"),
     _dtype_mistake("rms_norm")),
    returns="a tensor of x's shape",
    spec=(Spec("values (random inputs)", "x / sqrt(mean(x^2 over the last dim) + eps) * weight; x (..., d), weight (d,) -> (..., d)."),
          Spec("leading dims", "Any number of leading dims, none included: x (d,) works too.",
               lambda: [Case("x (d,), no leading dims", (_randn(6, seed=40), _randn(6, seed=41) + 1)),
                        Case("x with three leading dims", (_randn(2, 2, 3, 5, seed=42), _randn(5, seed=43) + 1))]),
          Spec("eps inside", "eps goes INSIDE the square root.",
               lambda: [Case("tiny inputs, eps=1e-2", (_randn(3, 4, seed=44, scale=1e-3), _randn(4, seed=45) + 1),
                             {"eps": 1e-2})]),
          Spec("values (worked example)", "[3, 4] with weight 1 -> [3, 4] / sqrt(12.5 + eps)."),
          Spec("eps given", "Use the eps you are given (the default is 1e-5).",
               lambda: [Case("eps=0.5", (_randn(2, 4, seed=46), _randn(4, seed=47) + 1), {"eps": 0.5}),
                        Case("the default eps", (_randn(3, 4, seed=48, scale=3e-3), _randn(4, seed=49) + 1))]),
          Spec("dtype", "The result has x's dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 x and weight", _f32(_randn(3, 8, seed=50), _randn(8, seed=51) + 1))],
               same_dtype_and_values),
          Spec("inputs unchanged", "x and weight are not changed."),
          Spec("rules", _rule(_F, "no torch.rms_norm", _LAYERS))),
    rules={"forbid": ["functional", "rms_norm", "layers"]})


# --- RoPE: rotating pairs ---------------------------------------------------------------------------------------
def _rope_tables(seq, half, theta=10000.0):
    from seqlab.model.rope import rope_angles
    angles = rope_angles(theta, 2 * half, seq)  # float64
    return angles.cos(), angles.sin()


def _rope_cases():
    cos, sin = _rope_tables(3, 2)
    cases = [Case("the worked example", (_tensor([[1.0, 0.0, 0.0, 1.0]] * 3), cos, sin))]
    cos, sin = _rope_tables(5, 4)
    cases.append(Case("random inputs 1", (_randn(2, 5, 8, seed=7), cos, sin)))
    cases.append(Case("random inputs 2", (_randn(3, 2, 5, 8, seed=8), cos, sin)))
    return cases


ROTATE_PAIRS = _torch_exercise(
    "rotate_pairs", "RoPE: rotating pairs (PyTorch)", "旋转位置编码：旋转分量对（PyTorch）", "rotate_pairs(x, cos, sin)",
    """Rotate each ADJACENT pair (x[..., 2k], x[..., 2k+1]) of x (..., seq, d) by the angle whose cos/sin are given:
    (a, b) -> (a cos - b sin, a sin + b cos). cos, sin: (seq, d/2), broadcast over x's leading dims.
    x may have no leading dims (seq, d) or several (batch, heads, seq, d), and seq need not equal d/2.
    Returns a tensor of x's shape, the pairs interleaved as in x.
    The result has x's dtype: float32 in, float32 out.
    x, cos and sin are not changed.
    """ + _rule(_F, _LAYERS),
    _ref("rotate_pairs"), _rope_cases,
    (_mistake("rotate_pairs__half_split_pairs", "RoPE on half-split instead of interleaved pairs",
              "this exercise uses adjacent pairs (2k, 2k+1), the RoFormer paper's and seqlab's layout; your code uses "
              "half-split pairs (k, k + d/2), GPT-NeoX's and Hugging Face Llama's rotate_half. Both are valid RoPE, "
              "but weights trained with one need their q/k rows permuted for the other",
              ("旋转位置编码用了前后两半配对而不是相邻配对",
               "本练习使用相邻的分量对 (2k, 2k+1)，即 RoFormer 论文和 seqlab 的布局；你的代码用前后两半配对 (k, k + d/2)，"
               "即 GPT-NeoX 和 Hugging Face Llama 的 rotate_half。两种都是有效的旋转位置编码，但用一种训练的权重换另一种时要重排 q/k 的行"),
              ("RoPE rotates two coordinates of each query and key together; which two is a convention. The paper and "
               "this course pair neighbours (2k, 2k+1); GPT-NeoX and Hugging Face's Llama pair k with k + d/2. Each "
               "is a valid positional encoding, but a checkpoint only works with the layout it was trained with, so "
               "the check asks for this course's.",
               "旋转位置编码把查询和键的两个坐标一起旋转；哪两个坐标配对是一种约定。论文和本课程让相邻的 (2k, 2k+1) 配对；"
               "GPT-NeoX 和 Hugging Face 的 Llama 让 k 和 k + d/2 配对。两者都是有效的位置编码，"
               "但检查点只能配合训练时的布局使用，所以本检查要求本课程的布局。"),
              convention="half-split pairs (k, k + d/2): GPT-NeoX's and Hugging Face Llama's rotate_half"),
     _mistake("rotate_pairs__rotated_backwards", "the rotation goes the other way",
              "(a, b) -> (a cos - b sin, a sin + b cos): the minus sign is on b in the first component",
              ("旋转方向反了", "(a, b) -> (a cos - b sin, a sin + b cos)：第一个分量里负号在 b 上"),
              ("Rotating by -angle instead of +angle still encodes positions, but q_i . k_j then depends on i - j with "
               "the opposite sign from the reference and from any checkpoint; the same weights attend to different "
               "positions.",
               "按 -角度而不是 +角度旋转仍然能编码位置，但 q_i . k_j 对 i - j 的依赖符号与参考实现及任何检查点相反；"
               "同样的权重会关注不同的位置。")),
     _mistake("rotate_pairs__cos_and_sin_swapped", "cos and sin swapped",
              "(a, b) -> (a cos - b sin, a sin + b cos): cos multiplies the coordinate itself, sin the other one",
              ("cos 和 sin 用反了", "(a, b) -> (a cos - b sin, a sin + b cos)：cos 乘坐标本身，sin 乘另一个坐标"),
              ("Swapping cos and sin rotates by 90 degrees minus the angle: position 0, which must be left as it is "
               "(angle 0), is turned by a quarter circle, and relative positions no longer come out of q . k.",
               "cos 和 sin 对调，相当于旋转 90 度减去原角度：本应保持不变的位置 0（角度为 0）被转了四分之一圈，"
               "q . k 也不再只依赖相对位置。")),
     _mistake("rotate_pairs__pairs_not_interleaved", "the rotated pairs are not put back in place",
              "write the rotated (a', b') back where (a, b) were: torch.stack((a', b'), dim=-1).flatten(-2), "
              "not torch.cat((a', b'), dim=-1), which moves every even coordinate to the first half",
              ("旋转后的分量对没有放回原位", "把旋转后的 (a', b') 放回 (a, b) 原来的位置：torch.stack((a', b'), dim=-1).flatten(-2)，"
               "而不是 torch.cat((a', b'), dim=-1)，后者把所有偶数坐标移到了前半部分"),
              ("A rotation changes the values of a pair, not where its coordinates live. Concatenating the rotated "
               "evens then the rotated odds permutes the features of every query and key, so the next matmul reads "
               "them in the wrong places.",
               "旋转改变的是分量对的数值，而不是坐标的位置。先拼接旋转后的偶数坐标再拼接奇数坐标，会打乱每个查询和键的特征顺序，"
               "后面的矩阵乘法就会在错误的位置读取它们。")),
     _leading_dims_mistake("rotate_pairs"),
     _dtype_mistake("rotate_pairs")),
    returns="a tensor of x's shape",
    spec=(Spec("values (random inputs)", "(a, b) -> (a cos - b sin, a sin + b cos)."),
          Spec("leading dims", "x may have no leading dims (seq, d) or several (batch, heads, seq, d), and seq need "
                               "not equal d/2.",
               lambda: [Case("x (seq, d), no leading dims", (_randn(5, 8, seed=60), *_rope_tables(5, 4))),
                        Case("x (batch, heads, seq, d), seq != d/2", (_randn(2, 3, 3, 12, seed=61), *_rope_tables(3, 6))),
                        Case("x (batch, seq, d), seq 7 > d/2", (_randn(1, 7, 4, seed=62), *_rope_tables(7, 2)))]),
          Spec("values (worked example)", "Returns a tensor of x's shape, the pairs interleaved as in x."),
          Spec("dtype", "The result has x's dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 x, cos and sin", _f32(_randn(2, 4, 6, seed=63), *_rope_tables(4, 3)))],
               same_dtype_and_values),
          Spec("inputs unchanged", "x, cos and sin are not changed."),
          Spec("rules", _rule(_F, _LAYERS))),
    rules={"forbid": ["functional", "layers"]})


# --- scaled dot-product attention ----------------------------------------------------------------------------
def _sdpa_cases():
    import torch
    eye = torch.eye(2, dtype=torch.float64)
    cases = [Case("the worked example", (eye, eye, _tensor([[1.0, 2.0], [3.0, 4.0]])), {"causal": True})]
    cases.append(Case("random inputs 1", (_randn(2, 3, 4, 8, seed=9), _randn(2, 3, 4, 8, seed=10), _randn(2, 3, 4, 5, seed=11))))
    cases.append(Case("random inputs 2 (causal)", (_randn(2, 5, 4, seed=12, scale=2), _randn(2, 5, 4, seed=13, scale=2),
                                                   _randn(2, 5, 3, seed=14)), {"causal": True}))
    mask = _tensor([[True, False, True, True, False]] * 3, "bool")
    cases.append(Case("random inputs 3 (mask)", (_randn(3, 6, seed=15), _randn(5, 6, seed=16), _randn(5, 2, seed=17)),
                      {"mask": mask}))
    return cases


def _qkv(n, m, d_k, d_v, seed, lead=(), scale=1.0):
    return (_randn(*lead, n, d_k, seed=seed, scale=scale), _randn(*lead, m, d_k, seed=seed + 1, scale=scale),
            _randn(*lead, m, d_v, seed=seed + 2))


def _visible(*shape, seed):
    """A random bool mask with every row's first key visible (no row fully hidden)."""
    mask = _randn(*shape, seed=seed) > 0
    mask[..., 0] = True
    return mask


def _fully_masked_cases():
    mask = _visible(3, 4, seed=74)
    mask[1] = False                                        # query 1 may attend no key
    causal_mask = _visible(4, 4, seed=75)
    causal_mask[0, 0] = False                              # with causal=True, query 0 has no key left
    return [Case("a row whose keys are all masked", _qkv(3, 4, 5, 2, seed=70), {"mask": mask}),
            Case("causal=True with key 0 masked for query 0", _qkv(4, 4, 3, 3, seed=71), {"mask": causal_mask, "causal": True})]


def _sdpa_scale(ev) -> str | None:
    """The student's output is softmax(Q K^T / c) V for a named constant c other than sqrt(d_k)."""
    attend = reference("scaled_dot_product_attention")
    said = None
    for i in ev.usable("all"):
        if not ev.wrong(i, ()):
            continue
        Q, K, V = ev.cases[i].args[:3]
        d_k, m, d_v = Q.shape[-1], K.shape[-2], V.shape[-1]
        names = {"1 (no scale)": 1.0, "d_k": float(d_k), "sqrt(m) (m, the number of keys)": math.sqrt(m),
                 "sqrt(d_v) (d_v, the value width)": math.sqrt(d_v)}
        found = [name for name, c in names.items() if not math.isclose(c, math.sqrt(d_k)) and D.close(
            attend(Q * (math.sqrt(d_k) / c), K, V, *ev.cases[i].args[3:], **ev.cases[i].kwargs), ev.outputs[i],
            ev.rtol, ev.atol)]
        if not found or (said is not None and said not in found):
            return None
        said = said or found[0]
    return f"the scores are divided by {said} instead of sqrt(d_k)" if said else None


_SDPA_DOC = """softmax(Q K^T / sqrt(d_k)) V. Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v) -> (..., n, d_v).
    n and m may differ, and so may d_k and d_v.
    The leading dims broadcast, and there may be several: (batch, heads, n, d_k).
    mask: bool (n, m) or broadcastable, True = the query may attend the key.
    causal=True also hides keys after each query (query i sees keys 0..i when n == m).
    With n < m (keys cached from earlier positions) query i sits at position m - n + i and sees keys 0..m-n+i.
    causal=True together with a mask: a key is visible only where both allow it.
    A row with no visible key outputs 0 (never NaN).
    Large scores stay finite: subtract each row's maximum before exp.
    The output has V's dtype: float32 in, float32 out.
    Q, K, V and mask are not changed.
    Worked example: Q = K = I, V = [[1, 2], [3, 4]], causal -> [[1, 2], [2.34, 3.34]].
    """ + _rule(_F + " (scaled_dot_product_attention included)", _SOFTMAX_RULE, _LAYERS)

SDPA = _torch_exercise(
    "scaled_dot_product_attention", "Scaled dot-product attention (PyTorch)", "缩放点积注意力（PyTorch）",
    "scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False)", _SDPA_DOC,
    _ref("scaled_dot_product_attention"), _sdpa_cases,
    (_mistake("scaled_dot_product_attention__missing_scale", "a missing 1/sqrt(d_k)",
              "divide the scores Q K^T by sqrt(d_k) before the softmax",
              ("缺少 1/sqrt(d_k)", "在 softmax 之前把得分 Q K^T 除以 sqrt(d_k)"),
              ("With d_k independent unit-variance features, q . k has variance d_k: without the scale, scores grow "
               "with the head width, the softmax saturates to one key, and its gradient vanishes.",
               "若 d_k 个特征独立且方差为 1，q . k 的方差就是 d_k：不缩放的话，得分随头的宽度增大，softmax 饱和到只关注一个键，梯度随之消失。")),
     _mistake("scaled_dot_product_attention__scaled_by_d_k", "scores divided by d_k instead of sqrt(d_k)",
              "the scale is 1/sqrt(d_k): it makes the scores' variance 1; 1/d_k shrinks them to 1/d_k",
              ("得分除以 d_k 而不是 sqrt(d_k)", "缩放因子是 1/sqrt(d_k)：它让得分的方差为 1；除以 d_k 会把方差缩小到 1/d_k"),
              ("The scale is chosen to keep the scores' variance at 1 whatever the width. Dividing by d_k overshoots: "
               "the scores shrink as heads get wider, and attention flattens towards a plain average of the values.",
               "缩放因子的作用是无论宽度多少都让得分方差保持为 1。除以 d_k 过头了：头越宽得分越小，注意力趋于对值的简单平均。")),
     _mistake("scaled_dot_product_attention__wrong_scale", "the scores divided by the wrong constant",
              "the scale is 1/sqrt(d_k), d_k = Q.shape[-1], the width the dot product sums over",
              ("得分除以了错误的常数", "缩放因子是 1/sqrt(d_k)，d_k = Q.shape[-1]，即点积求和的宽度"),
              ("The scale is there to keep q . k at unit variance, and q . k sums d_k products. Another constant (the "
               "number of keys, the value width) is right only when it happens to equal sqrt(d_k).",
               "缩放是为了让 q . k 保持单位方差，而 q . k 是 d_k 个乘积之和。别的常数（键的个数、值的宽度）只有碰巧等于 sqrt(d_k) 时才对。"),
              implementation=False, recognise=lambda ev: _sdpa_scale(ev)),
     _mistake("scaled_dot_product_attention__softmax_over_queries", "softmax over the wrong axis",
              "normalize each query's row over the keys (dim=-1), not over the queries (dim=-2)",
              ("softmax 的轴错了", "对每个查询的那一行在键上归一化 (dim=-1)，而不是在查询上 (dim=-2)"),
              ("Each query distributes one unit of attention over the keys it may see: its row of weights sums to 1. "
               "Normalising the columns instead makes each KEY's weights sum to 1, so a query's output is no longer "
               "an average of values.",
               "每个查询把一份注意力分配给它能看到的键：它那一行权重的和为 1。改为按列归一化，就变成每个键的权重和为 1，"
               "查询的输出不再是值的加权平均。")),
     _mistake("scaled_dot_product_attention__causal_mask_excludes_current",
              "causal mask off by one: the current position excluded",
              "query i may attend key i itself: keep j <= i (torch.tril with diagonal=0)",
              ("因果掩码差一：排除了当前位置", "查询 i 可以关注键 i 本身：保留 j <= i（torch.tril，diagonal=0）"),
              ("The causal mask hides the FUTURE. Position i's own token is known when predicting the next one, and "
               "hiding it leaves position 0 with no key at all.",
               "因果掩码隐藏的是未来。预测下一个词元时，位置 i 自己的词元是已知的；把它也隐藏掉，位置 0 就一个键也没有了。"),
              recognise=matches_where_finite("scaled_dot_product_attention__causal_mask_excludes_current")),
     _mistake("scaled_dot_product_attention__causal_mask_includes_next",
              "causal mask off by one: the next (future) position included",
              "query i must not see key i+1: j <= i, not j <= i + 1",
              ("因果掩码差一：包含了下一个（未来的）位置", "查询 i 不能看到键 i+1：j <= i，而不是 j <= i + 1"),
              ("Letting position i see token i+1 lets the model read the answer it is trained to predict: training "
               "loss drops fast and generation, where token i+1 does not exist yet, fails.",
               "让位置 i 看到词元 i+1，就等于让模型读到它要预测的答案：训练损失下降很快，"
               "而生成时词元 i+1 还不存在，模型就不行了。")),
     _mistake("scaled_dot_product_attention__mask_inverted", "the mask read inverted",
              "True means MAY attend: fill -inf where the mask is False",
              ("掩码的含义反了", "True 表示可以关注：在掩码为 False 的地方填 -inf"),
              ("Mask conventions differ between libraries (torch's boolean attn_mask means may-attend, a key padding "
               "mask often means hidden); this exercise's True = may attend. Read inverted, each query attends exactly "
               "the keys it should ignore.",
               "不同库的掩码约定不同（torch 的布尔 attn_mask 表示可以关注，key padding mask 常表示被隐藏）；"
               "本练习中 True = 可以关注。读反了，每个查询恰好关注了它应该忽略的键。")),
     _mistake("scaled_dot_product_attention__causal_ignored_with_a_mask", "causal=True ignored when a mask is given",
              "apply both: visible = mask & causal_mask; an if/elif keeps only one of them",
              ("给了掩码时忽略了 causal=True", "两者都要用：visible = mask & causal_mask；if/elif 只会保留其中一个"),
              ("A padded causal batch needs both masks at once: the padding hides missing keys and the causal mask "
               "hides future ones. Keeping only the mask lets every position read the future.",
               "带填充的因果批次需要同时用两个掩码：填充掩码隐藏不存在的键，因果掩码隐藏未来的键。只保留前者，每个位置都能读到未来。")),
     _mistake("scaled_dot_product_attention__mask_ignored_when_causal", "the mask ignored when causal=True",
              "apply both: visible = mask & causal_mask",
              ("causal=True 时忽略了掩码", "两者都要用：visible = mask & causal_mask"),
              ("With causal=True and a padding mask, dropping the mask lets real tokens attend to padding, so the "
               "same sentence gives different outputs depending on how much its batch was padded.",
               "causal=True 又有填充掩码时，丢掉掩码会让真实词元关注填充位置，"
               "同一句话的输出就会随它所在批次的填充多少而变化。")),
     _mistake("scaled_dot_product_attention__causal_from_the_first_key", "with n < m, the causal mask starts at key 0",
              "with cached keys the queries are the LAST n positions: query i sits at position m - n + i and sees keys "
              "0..m-n+i (torch.ones(n, m).tril(m - n)); right only when n == m",
              ("n < m 时因果掩码从键 0 开始对齐", "有缓存的键时，查询是最后 n 个位置：查询 i 位于位置 m - n + i，能看到键 0..m-n+i"
               "（torch.ones(n, m).tril(m - n)）；只有 n == m 时才对"),
              ("When generating with a KV cache, the one new query is the latest position and must see every cached "
               "key. A mask aligned to key 0 lets it see only the first key: square tests pass, generation breaks.",
               "用 KV 缓存生成时，新的那个查询是最新的位置，必须能看到所有缓存的键。从键 0 对齐的掩码只让它看到第一个键："
               "方阵测试能通过，生成却坏了。")),
     _mistake("scaled_dot_product_attention__nan_on_fully_masked_rows", "NaN on a row with no visible key",
              "a row of -inf scores gives exp() = 0 everywhere and 0/0 = NaN: make its weights 0 instead (e.g. where the "
              "row maximum is -inf, use 0 in its place, and divide by the sum clamped above 0)",
              ("没有可见键的行得到 NaN", "全为 -inf 的一行得分 exp() 后全是 0，0/0 = NaN：让这行的权重为 0"
               "（例如行最大值为 -inf 时用 0 代替，并把分母限制为大于 0）"),
              ("Fully masked rows are normal: a padded query, or a query before every visible key. A NaN there "
               "reaches the loss through the next layers and makes every gradient NaN, even though the row itself was "
               "meant to be ignored.",
               "完全被掩码的行很常见：填充的查询，或位于所有可见键之前的查询。那里的 NaN 会经过后面的层传到损失，"
               "让所有梯度都变成 NaN，尽管这一行本该被忽略。"),
              recognise=non_finite_on("fully masked", "a row with no visible key must output 0, not NaN")),
     _mistake("scaled_dot_product_attention__max_not_subtracted", "large scores overflow",
              "subtract each row's maximum score before exp(): softmax(s) = softmax(s - max)",
              ("大的得分溢出", "exp() 之前减去每行的最大得分：softmax(s) = softmax(s - max)"),
              ("Scores grow with the size of the queries and keys, and a score of 89 already overflows exp() in "
               "float32. Subtracting the row maximum changes no weight and keeps every exp() at most 1.",
               "得分随查询和键的大小增长，float32 中得分到 89 就会让 exp() 溢出。减去每行最大值不改变任何权重，并让每个 exp() 不超过 1。"),
              implementation=False, recognise=non_finite_on("large scores", "each row's maximum is not subtracted before exp()")),
     _sentence("scaled_dot_product_attention", "n m differ", "right only for square attention (n == m, d_k == d_v)",
               "keep the shapes apart: scores are (..., n, m) = Q @ K.transpose(-2, -1); the output (..., n, d_v) = weights @ V",
               ("只对方阵注意力正确（n == m，d_k == d_v）", "分清各个形状：得分 (..., n, m) = Q @ K.transpose(-2, -1)；输出 (..., n, d_v) = 权重 @ V"),
               ("Queries and keys need not come from the same sequence (cross-attention, cached keys), and the value "
                "width need not equal the key width. Tests with square shapes cannot tell n from m or d_k from d_v.",
                "查询和键不必来自同一个序列（交叉注意力、缓存的键），值的宽度也不必等于键的宽度。"
                "用方阵形状测试分不清 n 和 m，也分不清 d_k 和 d_v。")),
     _leading_dims_mistake("scaled_dot_product_attention"),
     _sentence("scaled_dot_product_attention", "mask broadcast", "a mask with leading dims is not broadcast",
               "combine the mask with the scores by broadcasting (scores.masked_fill(~mask, -inf)), whatever its leading dims",
               ("带前导维的掩码没有广播", "用广播把掩码作用到得分上（scores.masked_fill(~mask, -inf)），不管它有几个前导维"),
               ("A padding mask is per sequence, (batch, 1, n, m), shared by every head; broadcasting applies it to "
                "each head without copies.",
                "填充掩码是按序列给的，(batch, 1, n, m)，所有头共用；广播把它作用到每个头上，无需复制。")),
     _dtype_mistake("scaled_dot_product_attention", "V's")),
    returns="a tensor (..., n, d_v)",
    spec=(Spec("values (random inputs)", "softmax(Q K^T / sqrt(d_k)) V."),
          Spec("n m differ", "n and m may differ, and so may d_k and d_v.",
               lambda: [Case("n 4, m 7, d_k 6, d_v 3", _qkv(4, 7, 6, 3, seed=80)),
                        Case("n 3, m 5, a mask (3, 5)", _qkv(3, 5, 4, 2, seed=81), {"mask": _visible(3, 5, seed=82)})]),
          Spec("leading dims", "The leading dims broadcast, and there may be several: (batch, heads, n, d_k).",
               lambda: [Case("Q, K, V (batch, heads, n, d)", _qkv(4, 6, 5, 2, seed=83, lead=(2, 3))),
                        Case("K and V (heads, m, d) broadcast against Q (batch, heads, n, d)",
                             (_randn(2, 3, 4, 5, seed=84), _randn(3, 6, 5, seed=85), _randn(3, 6, 2, seed=86)))]),
          Spec("mask broadcast", "mask: bool (n, m) or broadcastable, True = the query may attend the key.",
               lambda: [Case("a mask (batch, 1, n, m) for (batch, heads, n, d)", _qkv(4, 6, 5, 2, seed=87, lead=(2, 3)),
                             {"mask": _visible(2, 1, 4, 6, seed=88)})]),
          Spec("causal", "causal=True also hides keys after each query (query i sees keys 0..i when n == m).",
               lambda: [Case("causal, (batch, n, d) with n == m", _qkv(5, 5, 4, 3, seed=89, lead=(3,)), {"causal": True})]),
          Spec("cached keys", "With n < m (keys cached from earlier positions) query i sits at position m - n + i "
                              "and sees keys 0..m-n+i.",
               lambda: [Case("causal, n 3 < m 6", _qkv(3, 6, 4, 3, seed=90, lead=(2,)), {"causal": True}),
                        Case("causal, one query, m 5", _qkv(1, 5, 4, 2, seed=91), {"causal": True})]),
          Spec("causal and mask", "causal=True together with a mask: a key is visible only where both allow it.",
               lambda: [Case("causal=True and a mask", _qkv(5, 5, 4, 3, seed=92, lead=(2,)),
                             {"mask": _visible(5, 5, seed=93) | _tensor([[i == j for j in range(5)] for i in range(5)], "bool"),
                              "causal": True})]),
          Spec("fully masked", "A row with no visible key outputs 0 (never NaN).", _fully_masked_cases),
          Spec("large scores", "Large scores stay finite: subtract each row's maximum before exp.",
               lambda: [Case("scores in the thousands", _qkv(3, 4, 4, 2, seed=94, scale=30.0)),
                        Case("scores in the thousands, causal", _qkv(4, 4, 4, 2, seed=95, scale=30.0), {"causal": True})]),
          Spec("dtype", "The output has V's dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 Q, K, V, causal", _f32(*_qkv(4, 4, 6, 3, seed=96, lead=(2,))), {"causal": True})],
               same_dtype_and_values),
          Spec("inputs unchanged", "Q, K, V and mask are not changed."),
          Spec("values (worked example)", "Worked example: Q = K = I, V = [[1, 2], [3, 4]], causal -> [[1, 2], [2.34, 3.34]]."),
          Spec("rules", _rule(_F + " (scaled_dot_product_attention included)", _SOFTMAX_RULE, _LAYERS))),
    rules={"forbid": ["functional", "attention", "softmax", "layers"]})


# --- cross-entropy -----------------------------------------------------------------------------------------------
def _ce_cases():
    import torch
    gen = _gen(18)
    return [Case("the worked example", (_tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]]), torch.tensor([0, 1]))),
            Case("random inputs 1", (_randn(2, 4, 7, seed=19, scale=3), torch.randint(0, 7, (2, 4), generator=gen))),
            Case("random inputs 2 (large logits)", (_randn(5, 6, seed=20, scale=300), torch.randint(0, 6, (5,), generator=gen)))]


def _targets(*shape, vocab, seed):
    import torch
    return torch.randint(0, vocab, shape, generator=_gen(seed))


def _positions_and_vocab(case):
    logits = case.args[0]
    n = 1
    for size in logits.shape[:-1]:
        n *= size
    return n, logits.shape[-1]


CROSS_ENTROPY = _torch_exercise(
    "cross_entropy", "Cross-entropy (PyTorch)", "交叉熵（PyTorch）", "cross_entropy(logits, targets)",
    """Mean over every position of -log softmax(logits)[target]. logits (..., vocab) float, targets (...) ints
    -> a 0-d tensor.
    Any number of leading dims: logits (batch, seq, vocab) with targets (batch, seq), more, or none.
    targets may be int64 or int32.
    Use log-sum-exp with the maximum subtracted, so logits of 1000 stay finite.
    The loss has the logits' dtype: float32 in, float32 out.
    logits and targets are not changed.
    """ + _rule(_F + " (cross_entropy, log_softmax, nll_loss included)", _SOFTMAX_RULE, _LAYERS),
    _ref("cross_entropy"), _ce_cases,
    (_mistake("cross_entropy__summed_not_averaged", "the loss is summed, not averaged",
              "divide by the number of positions (the mean over every leading dimension)",
              ("损失求和而不是取平均", "除以位置的个数（在所有前导维上取平均）"),
              ("A summed loss grows with the batch and the sequence length, so the gradient's size, and with it the "
               "right learning rate, changes whenever they do. The mean makes the loss a per-token quantity (its exp "
               "is the perplexity).",
               "求和的损失随批大小和序列长度增长，梯度的大小以及合适的学习率都会随之改变。"
               "取平均让损失成为每个词元的量（它的指数就是困惑度）。"),
              recognise=D.factor_of(((),), lambda case: {"N, the number of positions": _positions_and_vocab(case)[0]})),
     _mistake("cross_entropy__log_softmax_over_wrong_axis", "log-softmax over the wrong axis",
              "normalize over the vocabulary (the last dimension), not over the positions",
              ("log-softmax 的轴错了", "在词表（最后一维）上归一化，而不是在位置上"),
              ("Each position predicts one token out of the vocabulary: its probabilities over the vocabulary sum to "
               "1. Normalising over positions compares a token's score across positions, which is not a prediction.",
               "每个位置从词表中预测一个词元：它在词表上的概率和为 1。在位置上归一化比较的是同一个词元在不同位置上的得分，那不是预测。")),
     _mistake("cross_entropy__max_not_subtracted", "the maximum is not subtracted in log-sum-exp",
              "log(sum(exp(x))) overflows for logits of 1000: compute m + log(sum(exp(x - m))) with m the row maximum",
              ("log-sum-exp 中没有减去最大值", "logits 为 1000 时 log(sum(exp(x))) 会溢出：用 m + log(sum(exp(x - m)))，m 为每行最大值"),
              ("log-sum-exp is the one place where cross-entropy can overflow. Shifting by the row maximum m is exact, "
               "log sum exp(x) = m + log sum exp(x - m), and keeps every exp() at most 1.",
               "log-sum-exp 是交叉熵唯一可能溢出的地方。按每行最大值 m 平移是精确的，log sum exp(x) = m + log sum exp(x - m)，"
               "并且让每个 exp() 不超过 1。"),
              recognise=non_finite_on("large logits", "the maximum is not subtracted in log-sum-exp")),
     _mistake("cross_entropy__probabilities_not_log", "probabilities used instead of log-probabilities",
              "the loss is -log p(target), not -p(target): take the log (log-softmax), then pick the target's entry",
              ("用了概率而不是对数概率", "损失是 -log p(target)，不是 -p(target)：先取对数（log-softmax），再取目标项"),
              ("-p(target) is bounded and nearly flat where the model is confidently wrong, so it barely corrects "
               "the worst mistakes; -log p(target) grows without bound there and is the likelihood the model is "
               "trained to maximise.",
               "-p(target) 有界，在模型自信地犯错时几乎是平的，很难纠正最严重的错误；-log p(target) 在那里无界增长，"
               "而且正是模型要最大化的似然。")),
     _mistake("cross_entropy__averaged_over_the_vocabulary_too", "averaged over the vocabulary as well",
              "pick the target's entry of each row (logits.gather(-1, targets[..., None])), then average over positions "
              "only; a mean over the whole (N, vocab) matrix divides by vocab too",
              ("连词表也一起平均了", "先取每行目标的那一项（logits.gather(-1, targets[..., None])），再只在位置上平均；"
               "对整个 (N, vocab) 矩阵取平均还会多除以 vocab"),
              ("Only the target's entry of each row enters the loss. Averaging a masked (N, vocab) matrix divides by "
               "vocab as well, shrinking the loss and its gradient by the vocabulary size.",
               "每行只有目标那一项进入损失。对带掩码的 (N, vocab) 矩阵取平均会多除以 vocab，损失和梯度都缩小词表大小倍。"),
              recognise=D.factor_of(((),), lambda case: {"1/vocab": 1 / _positions_and_vocab(case)[1]})),
     _sentence("cross_entropy", "shapes and types", "the loss is not a 0-d tensor",
               "return the mean as a 0-d tensor (.mean() gives one); not a Python float, and not a tensor of shape (1,)",
               ("损失不是 0 维张量", "把平均值作为 0 维张量返回（.mean() 就是）；不要返回 Python 浮点数，也不要返回形状为 (1,) 的张量"),
               ("loss.backward() needs a tensor that is part of the graph; a Python float has no graph, and a tensor of "
                "shape (1,) breaks code that compares, logs or sums losses as scalars.",
                "loss.backward() 需要计算图中的张量；Python 浮点数没有计算图，形状为 (1,) 的张量会破坏把损失当标量来比较、记录或求和的代码。"),
               recognise=D.failed_check("shapes and types", alone=False)),
     _sentence("cross_entropy", "int32 targets", "int32 targets are not accepted",
               "convert the targets to int64 before indexing: targets.long() (gather needs int64 indices)",
               ("不接受 int32 的目标", "索引之前把目标转成 int64：targets.long()（gather 需要 int64 索引）"),
               ("Token ids are often stored compactly (uint16, int32) to save memory; the loss should take them as "
                "they come and convert them where an index must be int64.",
                "为了节省内存，词元 id 常以紧凑的类型（uint16、int32）存储；损失函数应原样接收，在需要 int64 索引的地方再转换。")),
     _leading_dims_mistake("cross_entropy"),
     _dtype_mistake("cross_entropy", "the logits'")),
    returns="a 0-d tensor",
    spec=(Spec("values (random inputs)", "Mean over every position of -log softmax(logits)[target]."),
          Spec("shapes and types", "logits (..., vocab) float, targets (...) ints -> a 0-d tensor."),
          Spec("leading dims", "Any number of leading dims: logits (batch, seq, vocab) with targets (batch, seq), "
                               "more, or none.",
               lambda: [Case("three leading dims", (_randn(2, 3, 4, 7, seed=100, scale=2), _targets(2, 3, 4, vocab=7, seed=101))),
                        Case("no leading dims: logits (vocab,), a 0-d target", (_randn(6, seed=102), _targets(vocab=6, seed=103)))]),
          Spec("int32 targets", "targets may be int64 or int32.",
               lambda: [Case("int32 targets", (_randn(3, 5, seed=104), _int32(_targets(3, vocab=5, seed=105))))]),
          Spec("large logits", "Use log-sum-exp with the maximum subtracted, so logits of 1000 stay finite.",
               lambda: [Case("logits near 1000", (_randn(4, 6, seed=106, scale=5) + 1000, _targets(4, vocab=6, seed=107))),
                        Case("logits near -1000", (_randn(2, 3, 5, seed=108, scale=5) - 1000, _targets(2, 3, vocab=5, seed=109)))]),
          Spec("dtype", "The loss has the logits' dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 logits", (*_f32(_randn(2, 3, 6, seed=110, scale=2)), _targets(2, 3, vocab=6, seed=111)))],
               same_dtype_and_values),
          Spec("inputs unchanged", "logits and targets are not changed."),
          Spec("rules", _rule(_F + " (cross_entropy, log_softmax, nll_loss included)", _SOFTMAX_RULE, _LAYERS))),
    rules={"forbid": ["functional", "cross_entropy", "softmax", "layers"]})


def _int32(t):
    import torch
    return t.to(torch.int32)


# --- the learning-rate schedule ---------------------------------------------------------------------------------
def _schedule_cases():
    worked = [Case("the worked example" if it == 0 else f"the worked example, step {it}", (it, 1.0, 0.1, 4, 12))
              for it in (0, 2, 4, 8, 12, 20)]
    return worked[:1] + [Case(f"random inputs, step {c.args[0]}", c.args) for c in worked[1:]] + [
        Case("random inputs, step 37", (37, 3e-4, 3e-5, 10, 100))]


def _phase(case) -> str:
    it, _, _, warmup, cycle = case.args
    return "warm-up" if it < warmup else "after the cycle" if it > cycle else "cosine"


def _schedule_family(name: str, phase: str, text: str) -> D.Recogniser:
    """Fits when every wrong rate is in ``phase`` and equals the mutant ``name``'s rate there (the rest of
    the schedule may be right or hold another slip)."""
    formula = _mutant(name)

    def recognise(ev) -> str | None:
        steps = []
        for i in ev.usable("all"):
            case = ev.cases[i]
            if _phase(case) != phase or not ev.wrong(i, ()):
                continue
            if not D.close(formula(*case.args), ev.outputs[i], ev.rtol, ev.atol):
                return None
            steps.append(case)
        return f"{text} ({_steps(steps)})" if steps else None
    return recognise


def _steps(cases) -> str:
    """'it = 0, 2 with max 1.0, min 0.1, warm-up 4, cycle 12; it = 5 with ...' for schedule cases."""
    by_setting: dict = {}
    for case in cases:
        by_setting.setdefault(case.args[1:], []).append(str(case.args[0]))
    return "; ".join(f"it = {', '.join(its)} with max {hi}, min {lo}, warm-up {w}, cycle {c}"
                     for (hi, lo, w, c), its in list(by_setting.items())[:2])


_PHASES = {"warm-up": "the warm-up", "cosine": "the cosine phase", "after the cycle": "the rate after the cycle"}


def _one_phase_wrong(ev) -> str | None:
    """Fits when the wrong rates all lie in one phase of the schedule; names it, its steps and the right phases."""
    wrong = [i for i in ev.usable("all") if ev.wrong(i, ())]
    phases = {_phase(ev.cases[i]) for i in wrong}
    if len(phases) != 1:
        return None
    right = [_PHASES[p] for p in _PHASES if p in {_phase(ev.cases[i]) for i in ev.usable("all")} - phases]
    return (f"only {_PHASES[phases.pop()]} is wrong ({_steps([ev.cases[i] for i in wrong])}); " + " and ".join(right)
            + (" is" if len(right) == 1 else " are") + " right") if right else None


_SCHEDULE_WHY = ("The schedule sets every step's size: a warm-up from 0 keeps the first, noisy Adam steps small; the "
                 "half cosine decays smoothly to the floor; after the cycle the rate stays at min. A slip in one phase "
                 "changes a whole stretch of training, and only the steps in that phase show it.",
                 "调度决定每一步的步长：从 0 开始的预热让最初那些噪声很大的 Adam 步子保持很小；半个余弦平滑地衰减到下限；"
                 "周期结束后学习率停在 min。某一阶段的差错会改变一整段训练，而只有那个阶段的步数能看出来。")

LR_COSINE_SCHEDULE = _torch_exercise(
    "lr_cosine_schedule", "The cosine learning-rate schedule", "余弦学习率调度",
    "lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters)",
    """Learning rate at iteration `it` (0-based), a float.
    it < warmup_iters: max * it / warmup_iters (linear warm-up from 0);
    warmup_iters <= it <= cosine_cycle_iters: min + (max - min) * (1 + cos(pi * progress)) / 2 with
    progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters);
    it > cosine_cycle_iters: min.""",
    _ref("lr_cosine_schedule"), _schedule_cases,
    (_mistake("lr_cosine_schedule__warmup_off_by_one", "the warm-up is off by one",
              "step 0 has learning rate 0: max * it / warmup_iters, not max * (it + 1) / warmup_iters",
              ("预热差一", "第 0 步的学习率是 0：max * it / warmup_iters，而不是 max * (it + 1) / warmup_iters"), _SCHEDULE_WHY,
              recognise=_schedule_family("lr_cosine_schedule__warmup_off_by_one", "warm-up",
                                         "in the warm-up the rate is max * (it + 1) / warmup_iters, one step ahead")),
     _mistake("lr_cosine_schedule__warmup_from_min", "the warm-up starts at min, not at 0",
              "the warm-up rises linearly from 0: max * it / warmup_iters",
              ("预热从 min 而不是从 0 开始", "预热从 0 线性上升：max * it / warmup_iters"), _SCHEDULE_WHY,
              recognise=_schedule_family("lr_cosine_schedule__warmup_from_min", "warm-up",
                                         "in the warm-up the rate is min + (max - min) * it / warmup_iters")),
     _mistake("lr_cosine_schedule__cosine_over_the_whole_run", "the cosine counts the warm-up steps",
              "progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters): the cosine starts after the warm-up",
              ("余弦把预热的步数也算进去了", "progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)：余弦从预热结束后开始"),
              _SCHEDULE_WHY,
              recognise=_schedule_family("lr_cosine_schedule__cosine_over_the_whole_run", "cosine",
                                         "in the cosine phase progress is it / cosine_cycle_iters")),
     _mistake("lr_cosine_schedule__full_cosine_period", "a full cosine period instead of half",
              "cos(pi * progress) goes from max down to min once; cos(2 pi progress) comes back up",
              ("用了完整的余弦周期而不是半个", "cos(pi * progress) 从 max 下降到 min 一次；cos(2 pi progress) 又会回升"), _SCHEDULE_WHY,
              recognise=_schedule_family("lr_cosine_schedule__full_cosine_period", "cosine",
                                         "in the cosine phase the angle is 2 pi progress, a full period")),
     _mistake("lr_cosine_schedule__max_and_min_swapped", "the cosine rises from min to max",
              "at progress 0 the rate is max and at progress 1 it is min: min + (max - min) * (1 + cos(pi progress)) / 2",
              ("余弦从 min 升到 max", "progress 为 0 时学习率是 max，为 1 时是 min：min + (max - min) * (1 + cos(pi progress)) / 2"),
              _SCHEDULE_WHY,
              recognise=_schedule_family("lr_cosine_schedule__max_and_min_swapped", "cosine",
                                         "in the cosine phase max and min are swapped")),
     _mistake("lr_cosine_schedule__no_floor_after_the_cycle", "no floor after the cycle",
              "after cosine_cycle_iters the rate stays at min; the cosine formula would climb back up",
              ("周期结束后没有下限", "cosine_cycle_iters 之后学习率保持为 min；余弦公式会重新上升"), _SCHEDULE_WHY,
              recognise=_schedule_family("lr_cosine_schedule__no_floor_after_the_cycle", "after the cycle",
                                         "after the cycle the cosine goes on instead of staying at min")),
     _mistake("lr_cosine_schedule__one_phase", "one phase of the schedule is wrong",
              "compare that phase's rates with its formula in the docstring: warm-up max * it / warmup_iters; cosine "
              "min + (max - min) * (1 + cos(pi * progress)) / 2; after the cycle min",
              ("调度的某一个阶段错了", "把该阶段的学习率与文档中的公式对照：预热 max * it / warmup_iters；余弦 "
               "min + (max - min) * (1 + cos(pi * progress)) / 2；周期之后 min"), _SCHEDULE_WHY,
              implementation=False, recognise=_one_phase_wrong),
     _sentence("lr_cosine_schedule", "a float", "the rate is not a Python float",
               "return a float (float(...)), not a tensor or an array: the optimizer's param_groups hold floats",
               ("学习率不是 Python 浮点数", "返回 float（float(...)），不要返回张量或数组：优化器的 param_groups 存的是浮点数"),
               ("The rate goes into optimizer.param_groups[...]['lr'] once per step. A tensor there keeps a graph or a "
                "device alive and makes every comparison and print a tensor operation; a float is what the optimizer expects.",
                "学习率每一步写入 optimizer.param_groups[...]['lr']。在那里放张量会保留计算图或设备，"
                "让每次比较和打印都成为张量运算；优化器期望的是浮点数。"),
               recognise=D.failed_check("a float", alone=False))),
    returns="a float", imports="import math",
    spec=(Spec("a float", "Learning rate at iteration `it` (0-based), a float.", verify=same_dtypes()),
          Spec("warm-up", "it < warmup_iters: max * it / warmup_iters (linear warm-up from 0);",
               lambda: [Case(f"warm-up, step {it}", (it, 2.0, 0.5, 4, 10)) for it in (0, 1, 3)]),
          Spec("cosine", "warmup_iters <= it <= cosine_cycle_iters: min + (max - min) * (1 + cos(pi * progress)) / 2 with",
               lambda: [Case(f"cosine, step {it}", (it, 2.0, 0.5, 4, 10)) for it in (4, 5, 7, 10)]),
          Spec("progress", "progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters);",
               lambda: [Case(f"progress, step {it}", (it, 1.0, 0.0, 3, 15)) for it in (6, 11)]),
          Spec("after the cycle", "it > cosine_cycle_iters: min.",
               lambda: [Case(f"after the cycle, step {it}", (it, 2.0, 0.5, 4, 10)) for it in (11, 30)])))


# --- one AdamW step ----------------------------------------------------------------------------------------------
def _adam_inputs(shape, seed, step, lr=0.01, wd=0.01, grad_scale=1.0, **kwargs):
    import torch
    p, g = _randn(*shape, seed=seed), _randn(*shape, seed=seed + 10, scale=grad_scale)
    if step == 1:
        m, v = torch.zeros(shape, dtype=torch.float64), torch.zeros(shape, dtype=torch.float64)
    else:
        m = _randn(*shape, seed=seed + 20, scale=0.1 * grad_scale)
        v = _randn(*shape, seed=seed + 30, scale=0.1 * grad_scale) ** 2
    return (p, g, m, v, step, lr), {"weight_decay": wd, **kwargs}


def _adamw_cases():
    return numbered_cases(lambda k, seed, step, wd: _adam_inputs((3, 4), seed, step, wd=wd),
                          ((0, 1, 0.1), (1, 5, 0.01), (2, 40, 0.3)))


def _adam_case(label, *args, **kwargs):
    return Case(label, *_adam_inputs(*args, **kwargs))


_ADAM_EPS = "eps beside the uncorrected sqrt(v): the Adam paper's efficient form, CS336's Algorithm 1"

ADAMW_STEP = _torch_exercise(
    "adamw_step", "One AdamW step", "AdamW 的一步",
    "adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)",
    """One AdamW update of the tensor p, as seqlab.training.AdamW does it. step: this update's number, 1-based.
    p <- p - lr * weight_decay * p           (decoupled weight decay: on the PARAMETER, not in the gradient)
    m <- beta1 m + (1 - beta1) grad;  v <- beta2 v + (1 - beta2) grad^2
    p <- p - lr * m_hat / (sqrt(v_hat) + eps), m_hat = m / (1 - beta1^step), v_hat = v / (1 - beta2^step)
    Use the betas, eps and weight_decay you are given.
    p, grad, m and v may have any shape.
    The results have p's dtype: float32 in, float32 out.
    Returns new tensors (p, m, v); do not change the arguments.
    """ + _rule(_F, _LAYERS, _OPTIM),
    _ref("adamw_step"), _adamw_cases,
    (_mistake("adamw_step__decay_after_the_update", "the weight decay after the Adam update (CS336's order)",
              "this exercise decays first (seqlab, torch.optim.AdamW, Loshchilov & Hutter); your code decays the "
              "updated parameter, CS336's order. Both are AdamW: accepted",
              ("在 Adam 更新之后做权重衰减（CS336 的顺序）",
               "本练习先衰减（seqlab、torch.optim.AdamW、Loshchilov & Hutter）；你的代码衰减更新后的参数，即 CS336 的顺序。两者都是 AdamW：接受"),
              ("Accepted, with a note: both orders decay the parameter itself, which is what makes AdamW AdamW, and "
               "they differ by lr^2 * weight_decay * update per step, far below anything training can notice. The check "
               "names the order so that a student comparing numbers with torch.optim.AdamW knows why the last digits differ.",
               "接受，并附说明：两种顺序都衰减参数本身，这正是 AdamW 之所以为 AdamW；它们每步只差 lr^2 * weight_decay * 更新量，"
               "远小于训练能察觉的程度。检查会说出顺序，让拿数字与 torch.optim.AdamW 对照的学生知道最后几位为何不同。"),
              convention="CS336's order: the Adam update, then the decay of the updated parameter", accepted=True),
     _mistake("adamw_step__eps_beside_the_uncorrected_root", "eps added to the uncorrected sqrt(v)",
              "this exercise uses m_hat / (sqrt(v_hat) + eps) (seqlab, torch.optim.AdamW); your code uses "
              "alpha_t m / (sqrt(v) + eps) with the bias corrections folded into alpha_t (the Adam paper's efficient "
              "form, CS336's Algorithm 1), whose eps is in effect eps / sqrt(1 - beta2^step): the same for ordinary "
              "gradients, different when they are as small as eps",
              ("eps 加在未校正的 sqrt(v) 上",
               "本练习使用 m_hat / (sqrt(v_hat) + eps)（seqlab、torch.optim.AdamW）；你的代码用 alpha_t m / (sqrt(v) + eps)，"
               "把偏差校正并入 alpha_t（Adam 论文的高效写法、CS336 的算法 1），其有效 eps 为 eps / sqrt(1 - beta2^step)："
               "普通梯度下相同，梯度小到与 eps 相当时不同"),
              ("Failed, by name: folding the bias corrections into the step size is the Adam paper's own shortcut, and "
               "both forms are valid Adams, but they are different functions. With eps beside the uncorrected sqrt(v) "
               "the effective eps is up to 31.6 times larger in the first steps, which matters exactly when gradients "
               "are tiny. This exercise asks for the form seqlab.training.AdamW and torch.optim.AdamW compute.",
               "判为不通过，并说明原因：把偏差校正并入步长是 Adam 论文自己的简化，两种写法都是有效的 Adam，但它们是不同的函数。"
               "eps 加在未校正的 sqrt(v) 上时，前几步的有效 eps 最多大 31.6 倍，恰恰在梯度很小时起作用。"
               "本练习要求 seqlab.training.AdamW 和 torch.optim.AdamW 所用的写法。"),
              recognise=matches_any("adamw_step__eps_beside_the_uncorrected_root", "adamw_step__cs336_algorithm",
                                    text=_ADAM_EPS),
              convention=_ADAM_EPS),
     _mistake("adamw_step__cs336_algorithm", "CS336's Algorithm 1: eps beside the uncorrected sqrt(v)",
              "this exercise uses m_hat / (sqrt(v_hat) + eps); your code is CS336's Algorithm 1, with eps beside the "
              "uncorrected sqrt(v) (its decay after the update is accepted): move eps to sqrt(v_hat)",
              ("CS336 的算法 1：eps 加在未校正的 sqrt(v) 上",
               "本练习使用 m_hat / (sqrt(v_hat) + eps)；你的代码是 CS336 的算法 1，eps 加在未校正的 sqrt(v) 上（其更新后再衰减的顺序是接受的）："
               "把 eps 移到 sqrt(v_hat) 旁"),
              ("CS336's handout folds the bias corrections into the step size, which puts eps beside the uncorrected "
               "sqrt(v). That is a valid Adam but a different function from this exercise's when gradients are tiny; "
               "its order (decay after the update) would be accepted on its own.",
               "CS336 的讲义把偏差校正并入步长，于是 eps 加在了未校正的 sqrt(v) 上。这是有效的 Adam，但梯度很小时与本练习的函数不同；"
               "它的顺序（更新后再衰减）单独出现时是接受的。"),
              convention=_ADAM_EPS),
     _mistake("adamw_step__eps_inside_the_root", "eps inside the square root",
              "the denominator is sqrt(v_hat) + eps, not sqrt(v_hat + eps): with tiny gradients sqrt(eps) = 1e-4 swamps sqrt(v_hat)",
              ("eps 放在了根号里", "分母是 sqrt(v_hat) + eps，不是 sqrt(v_hat + eps)：梯度很小时 sqrt(eps) = 1e-4 会盖过 sqrt(v_hat)"),
              ("eps only guards the division. Inside the root it becomes sqrt(1e-8) = 1e-4, ten thousand times larger, "
               "and every parameter whose gradients are smaller than that stops moving.",
               "eps 只是防止除以零。放进根号里就变成 sqrt(1e-8) = 1e-4，大了一万倍，梯度小于它的参数就几乎不再更新。")),
     _mistake("adamw_step__decay_on_the_moment", "AdamW weight decay applied to the moment instead of the parameter",
              "adding weight_decay * p to the gradient is L2 regularisation (Adam), and it is rescaled by v; AdamW "
              "decays the parameter itself: p <- p - lr * weight_decay * p",
              ("权重衰减加在了动量上而不是参数上", "把 weight_decay * p 加到梯度上是 L2 正则化（Adam），而且会被 v 重新缩放；AdamW 直接衰减参数：p <- p - lr * weight_decay * p"),
              ("This is the difference AdamW was invented for: L2 added to the gradient passes through Adam's "
               "per-parameter rescaling, so parameters with large gradients are hardly decayed. Decoupled decay shrinks "
               "every parameter by the same factor.",
               "这正是 AdamW 被提出的原因：加到梯度上的 L2 会经过 Adam 对每个参数的重新缩放，梯度大的参数几乎不被衰减。"
               "解耦的衰减让每个参数按同样的比例缩小。")),
     _mistake("adamw_step__no_bias_correction", "no bias correction",
              "divide m by 1 - beta1^step and v by 1 - beta2^step: early steps are otherwise several times too large",
              ("没有偏差校正", "把 m 除以 1 - beta1^step，v 除以 1 - beta2^step：否则最初几步会大好几倍"),
              ("m and v start at 0, so in the first steps they are averages over too few gradients, biased towards "
               "0. v is biased far more than m (1 - beta2 = 0.001 against 1 - beta1 = 0.1), so without the correction "
               "the first update is (1 - beta1) / sqrt(1 - beta2) = 3.16 times too large, and with the default betas the "
               "ratio peaks at 6.57 times at step 12 before it fades.",
               "m 和 v 从 0 开始，最初几步它们只平均了很少的梯度，偏向 0。校正恰好除掉这个偏差；"
               "v 的偏差远大于 m（1 - beta2 = 0.001，而 1 - beta1 = 0.1），所以没有校正时第一次更新大了 "
               "(1 - beta1) / sqrt(1 - beta2) = 3.16 倍；在默认的 beta 下，这个比值在第 12 步达到 6.57 倍，之后才逐渐消失。")),
     _mistake("adamw_step__bias_correction_one_step_late", "the bias correction uses step + 1",
              "step is this update's number, 1-based: m_hat = m / (1 - beta1^step), with the step you are given",
              ("偏差校正用了 step + 1", "step 是本次更新的序号，从 1 开始：m_hat = m / (1 - beta1^step)，用传入的 step"),
              ("The correction must match the number of gradients averaged into m and v so far, which is step. One "
               "step late, the first update is 0.74 times what it should be (about a quarter too small), the second 0.86 times.",
               "校正必须与 m 和 v 中已平均的梯度个数一致，也就是 step。晚一步的话，第一次更新只有应有的 0.74 倍（约小四分之一），第二次为 0.86 倍。")),
     _mistake("adamw_step__no_weight_decay", "the weight decay is missing", "apply p <- p - lr * weight_decay * p",
              ("缺少权重衰减", "执行 p <- p - lr * weight_decay * p"),
              ("weight_decay is part of the update: it pulls every parameter towards 0 each step, which is the "
               "regularisation the W in AdamW stands for.",
               "weight_decay 是更新的一部分：每一步把每个参数拉向 0，这正是 AdamW 中 W 所代表的正则化。")),
     _mistake("adamw_step__decay_without_the_learning_rate", "the decay is not scaled by the learning rate",
              "p <- p - lr * weight_decay * p: the decay shrinks p by lr * weight_decay, not by weight_decay",
              ("衰减没有乘以学习率", "p <- p - lr * weight_decay * p：衰减让 p 缩小 lr * weight_decay，而不是 weight_decay"),
              ("In AdamW (and torch.optim.AdamW) the decay follows the schedule: it is lr * weight_decay per step, so it "
               "fades with the learning rate. Without lr, weight_decay = 0.1 would remove a tenth of every weight "
               "each step.",
               "在 AdamW（以及 torch.optim.AdamW）中，衰减跟随调度：每步是 lr * weight_decay，会随学习率一起减小。"
               "不乘 lr 的话，weight_decay = 0.1 每步会去掉每个权重的十分之一。")),
     _mistake("adamw_step__corrected_moments_returned", "m_hat and v_hat returned instead of m and v",
              "return the moments m and v (the running averages the next step continues), not their corrected copies",
              ("返回了 m_hat 和 v_hat 而不是 m 和 v", "返回动量 m 和 v（下一步要继续的滑动平均），而不是校正后的副本"),
              ("The bias correction is for this step's update only. Stored corrected, the moments are corrected again "
               "next step and drift upwards.",
               "偏差校正只用于本步的更新。若把校正后的值存下来，下一步会再校正一次，动量就越来越大。")),
     _mistake("adamw_step__default_betas_and_eps", "the betas and eps you are given are ignored",
              "use the arguments betas and eps, not the defaults (0.9, 0.999) and 1e-8",
              ("忽略了传入的 betas 和 eps", "用参数 betas 和 eps，而不是默认值 (0.9, 0.999) 和 1e-8"),
              ("LM training commonly sets beta2 = 0.95 rather than 0.999; code that always uses the defaults trains a "
               "different optimizer from the one configured.",
               "语言模型训练常把 beta2 设为 0.95 而不是 0.999；总用默认值的代码训练的是另一个优化器，而不是配置的那个。")),
     _sentence("adamw_step", "any shape", "right only for some shapes of p",
               "the update is elementwise: write it on whole tensors (no assumption of 2-D shapes), and return p's shape",
               ("只对某些形状的 p 正确", "更新是逐元素的：在整个张量上写（不要假设是二维），并返回 p 的形状"),
               ("An optimizer updates every parameter of a model: matrices, vectors (norm gains) and embeddings. The "
                "update is elementwise, so it should not care about the shape.",
                "优化器要更新模型的所有参数：矩阵、向量（归一化的增益）和嵌入。更新是逐元素的，与形状无关。")),
     _dtype_mistake("adamw_step", "p's")),
    returns="a tuple (p, m, v) of tensors",
    spec=(Spec("step", "step: this update's number, 1-based.",
               lambda: [_adam_case("step 1 from m = v = 0", (4,), 120, 1, lr=0.1, wd=0.0),
                        _adam_case("step 2", (4,), 121, 2, lr=0.1, wd=0.0)]),
          Spec("decay", "p <- p - lr * weight_decay * p",
               lambda: [_adam_case("a large weight decay", (3, 3), 122, 10, lr=0.1, wd=0.5)]),
          Spec("values (random inputs)", "m <- beta1 m + (1 - beta1) grad; v <- beta2 v + (1 - beta2) grad^2"),
          Spec("eps", "p <- p - lr * m_hat / (sqrt(v_hat) + eps), m_hat = m / (1 - beta1^step), v_hat = v / (1 - beta2^step)",
               lambda: [_adam_case("tiny gradients, step 1", (2, 3), 123, 1, lr=0.01, wd=0.0, grad_scale=1e-9),
                        _adam_case("tiny gradients, step 4", (2, 3), 124, 4, lr=0.01, wd=0.0, grad_scale=1e-9)]),
          Spec("hyperparameters", "Use the betas, eps and weight_decay you are given.",
               lambda: [_adam_case("betas (0.8, 0.95), eps 1e-3", (3, 2), 125, 3, wd=0.2, betas=(0.8, 0.95), eps=1e-3)]),
          Spec("any shape", "p, grad, m and v may have any shape.",
               lambda: [_adam_case("p (5,)", (5,), 126, 2), _adam_case("p (2, 3, 2)", (2, 3, 2), 127, 7)]),
          Spec("dtype", "The results have p's dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 p, grad, m, v", *_f32_args(_adam_inputs((3, 4), 128, 3)))],
               same_dtype_and_values),
          Spec("inputs unchanged", "Returns new tensors (p, m, v); do not change the arguments."),
          Spec("rules", _rule(_F, _LAYERS, _OPTIM))),
    rules={"forbid": ["functional", "layers", "optim", "adam"]})


def _f32_args(args_kwargs):
    args, kwargs = args_kwargs
    return _f32(*args), kwargs


# --- training batches --------------------------------------------------------------------------------------------
def _batch_cases():
    import numpy as np
    worked = np.arange(10, 20, dtype=np.int64)
    return [Case("the worked example", (worked, 4, 3, "cpu"), {"generator": np.random.default_rng(0)}),
            Case("random inputs 1", (np.random.default_rng(1).integers(0, 50, 40), 8, 5, "cpu"),
                 {"generator": np.random.default_rng(2)}),
            Case("random inputs 2", (np.arange(60, dtype=np.int64) * 7 % 23, 6, 4, "cpu"),
                 {"generator": np.random.default_rng(3)})]


def _token_dataset(dtype: str, size: int, seed: int):
    import numpy as np
    return np.random.default_rng(seed).integers(0, 60000, size).astype(dtype)


def _batch_case(label, dataset, batch_size, context_length, seed):
    import numpy as np
    return Case(label, (dataset, batch_size, context_length, "cpu"), {"generator": np.random.default_rng(seed)})


def _windows_at_other_starts(ev) -> str | None:
    """Every row is a window of the dataset with its next tokens as targets, but not at the reference's starts."""
    import numpy as np
    if not ev.usable() or not any(ev.wrong(i, ()) for i in ev.usable()):
        return None
    for i in ev.usable():
        inputs, targets = (np.asarray(t) for t in ev.outputs[i])
        data = np.asarray(ev.cases[i].args[0]).astype(np.int64)
        length = inputs.shape[1]
        windows = np.lib.stride_tricks.sliding_window_view(data, length + 1)
        for row, target in zip(inputs, targets):
            full = np.concatenate([row, target[-1:]])
            if not (target[:-1] == row[1:]).all() or not (windows == full).all(1).any():
                return None
    return ("every row is a window of the dataset with its next tokens as targets, but not at the reference's "
            "starts: draw them with generator.integers(0, len(dataset) - context_length, size=batch_size), once")


def _not_tensors(ev) -> str | None:
    message = ev.failed.get("shapes and types", "")
    return message if "torch.Tensor" in message else None


GET_BATCH = _torch_exercise(
    "get_batch", "Training batches", "训练批次", "get_batch(dataset, batch_size, context_length, device, *, generator=None)",
    """batch_size windows at random starts of the 1-D token array dataset -> (inputs, targets), both int64
    tensors (batch_size, context_length) on device, with targets[i, j] = dataset[start_i + j + 1] (the
    next token). Draw the starts as generator.integers(0, len(dataset) - context_length, size=batch_size)
    (a window needs context_length + 1 tokens), so your batch is the reference's.
    dataset may hold any integer dtype (token files are often uint16): the tensors are int64 all the same.
    dataset may be exactly context_length + 1 tokens long (one possible start).
    dataset is not changed.""",
    _ref("get_batch"), _batch_cases,
    (_mistake("get_batch__targets_not_shifted", "the targets are not shifted",
              "a language model predicts the NEXT token: targets = dataset[start + 1 : start + context_length + 1]",
              ("目标没有错开一位", "语言模型预测的是下一个词元：targets = dataset[start + 1 : start + context_length + 1]"),
              ("With targets equal to the inputs the model learns to copy the token it is given, a task it solves "
               "perfectly and uselessly: the loss goes to 0 and nothing about language is learned.",
               "目标等于输入时，模型学会的是照抄给它的词元，这个任务能完美解决但毫无用处：损失降到 0，却学不到任何语言知识。")),
     _mistake("get_batch__one_start_too_many", "one start too many",
              "the last window would need a token after the end: draw starts from 0 to len(dataset) - context_length (exclusive)",
              ("起点多了一个", "最后一个窗口会需要数据末尾之后的词元：起点从 0 到 len(dataset) - context_length（不含）中抽取"),
              ("A window holds context_length inputs plus one more token for the last target, so the last valid start "
               "is len(dataset) - context_length - 1. One start more draws a window whose last target does not exist.",
               "一个窗口包含 context_length 个输入，外加最后一个目标所需的一个词元，所以最后一个合法起点是 len(dataset) - context_length - 1。"
               "多一个起点会抽到最后一个目标不存在的窗口。")),
     _mistake("get_batch__inputs_and_targets_swapped", "inputs and targets swapped",
              "return (inputs, targets): the inputs start at start, the targets one token later",
              ("输入和目标对调了", "返回 (inputs, targets)：输入从 start 开始，目标晚一个词元"),
              ("Swapped, the model is trained to predict the PREVIOUS token from the next one, a different task, and "
               "its generation runs backwards.",
               "对调之后，模型被训练成由下一个词元预测前一个词元，这是另一个任务，生成也会倒着进行。")),
     _mistake("get_batch__one_window_for_every_row", "one window repeated in every row",
              "draw batch_size starts and take one window at each (right only for batch_size 1)",
              ("每一行都是同一个窗口", "抽取 batch_size 个起点，在每个起点各取一个窗口（只有 batch_size 为 1 时才对）"),
              ("A batch averages the gradient over different windows to reduce its noise; the same window repeated "
               "gives the gradient of one window at the cost of many.",
               "批次在不同的窗口上平均梯度以减小噪声；重复同一个窗口只得到一个窗口的梯度，却付出了许多个的代价。")),
     _mistake("get_batch__starts_drawn_otherwise", "the starts are drawn differently",
              "draw them as generator.integers(0, len(dataset) - context_length, size=batch_size), so that the same "
              "generator gives the reference's batch",
              ("起点的抽取方式不同", "用 generator.integers(0, len(dataset) - context_length, size=batch_size) 抽取，"
               "这样同一个生成器给出与参考实现相同的批次"),
              ("The windows are right, only not the reference's: with the same generator and the same call, two "
               "implementations give the same batch, which is what makes runs reproducible and this check possible.",
               "窗口本身是对的，只是与参考实现不同：用同一个生成器、同样的调用，两种实现才会给出同一个批次，"
               "这使训练可以复现，也使本检查成为可能。"),
              implementation=False, recognise=_windows_at_other_starts),
     _mistake("get_batch__not_tensors", "the batch is not two torch tensors",
              "return (inputs, targets) as torch.int64 tensors on device: torch.from_numpy(...).to(device)",
              ("批次不是两个 torch 张量", "把 (inputs, targets) 作为 torch.int64 张量返回并放到 device 上：torch.from_numpy(...).to(device)"),
              ("The model's embedding indexes with the batch on the model's device; NumPy arrays or lists would be "
               "converted (and copied) on every step, or fail on a GPU.",
               "模型的嵌入层在模型所在设备上用批次做索引；NumPy 数组或列表每一步都要转换（并复制），在 GPU 上还会出错。"),
              implementation=False, recognise=_not_tensors),
     _sentence("get_batch", "int64", "the tensors keep the dataset's dtype instead of int64",
               "convert to int64 (np.asarray(window, dtype=np.int64) or .long()): token files are uint16 and an "
               "embedding needs int64 ids",
               ("张量沿用了数据集的类型而不是 int64", "转换为 int64（np.asarray(window, dtype=np.int64) 或 .long()）：词元文件是 uint16，嵌入层需要 int64 的 id"),
               ("Token files store ids compactly (uint16 for a vocabulary under 65,536). Indexing an embedding with "
                "uint16 or int32 ids fails or differs between devices; int64 is what torch's indexing expects.",
                "词元文件把 id 紧凑地存储（词表小于 65,536 时用 uint16）。用 uint16 或 int32 的 id 索引嵌入层会出错，"
                "或在不同设备上表现不同；int64 才是 torch 索引所期望的。")),
     _sentence("get_batch", "shortest dataset", "fails when only one start is possible",
               "with len(dataset) == context_length + 1 the only start is 0: generator.integers(0, 1) draws it",
               ("只有一个可能的起点时出错", "len(dataset) == context_length + 1 时唯一的起点是 0：generator.integers(0, 1) 会抽到它"),
               ("The bound of the starts is where off-by-one errors live; a dataset just long enough for one window "
                "shows whether the last start is handled.",
                "起点的上界正是差一错误藏身之处；刚好够一个窗口的数据集能看出最后一个起点是否处理正确。"))),
    returns="a tuple (inputs, targets) of int64 tensors", imports="import numpy as np\nimport torch",
    axes={0: ("row", "position"), 1: ("row", "position")},
    may_change=("generator",),
    spec=(Spec("values (random inputs)", "with targets[i, j] = dataset[start_i + j + 1] (the next token)."),
          Spec("values (worked example)", "Draw the starts as generator.integers(0, len(dataset) - context_length, "
                                          "size=batch_size)"),
          Spec("int64", "dataset may hold any integer dtype (token files are often uint16): the tensors are int64 all the same.",
               lambda: [_batch_case("a uint16 dataset", _token_dataset("uint16", 30, 130), 4, 5, 131),
                        _batch_case("an int32 dataset", _token_dataset("int32", 20, 132), 3, 4, 133)],
               same_dtype_and_values),
          Spec("shortest dataset", "dataset may be exactly context_length + 1 tokens long (one possible start).",
               lambda: [_batch_case("a dataset of context_length + 1 tokens", _token_dataset("int64", 6, 134), 3, 5, 135)]),
          Spec("inputs unchanged", "dataset is not changed.")))


# --- causal multi-head self-attention -------------------------------------------------------------------------
def _mhsa_args(shape, heads, seed):
    d = shape[-1]
    weights = tuple(_randn(d, d, seed=seed * 10 + i, scale=d ** -0.5) for i in range(4))
    return (_randn(*shape, seed=seed + 100), *weights, heads)


def _mhsa_cases():
    return numbered_cases(lambda k, seed, shape, heads: (_mhsa_args(shape, heads, seed), {}),
                          ((0, (1, 3, 4), 2), (1, (2, 5, 8), 2), (2, (2, 4, 12), 3)))


def _grown(label, args):
    return Case(f"{label} {GROWN}", args)


CAUSAL_MHSA = _torch_exercise(
    "causal_multihead_self_attention", "Causal multi-head self-attention (PyTorch)", "因果多头自注意力（PyTorch）",
    "causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads)",
    """x (batch..., seq, d_model); each weight (d_model, d_model) in torch's (out, in) layout: Q = x @ q_weight.T, ...
    x may have no batch dims (seq, d_model) or several (batch, group, seq, d_model).
    Head h takes the contiguous columns h*w:(h+1)*w (w = d_model / num_heads: a view as (..., seq, heads, w));
    each head: causal scaled dot-product attention with scale 1/sqrt(w); concatenate the heads in order;
    output = concat @ o_weight.T -> (batch..., seq, d_model).
    The output has x's dtype: float32 in, float32 out.
    x and the weights are not changed.
    No loop over heads or positions: batched ops.
    """ + _rule(_F, _SOFTMAX_RULE, _LAYERS),
    _ref("causal_multihead_self_attention"), _mhsa_cases,
    (_mistake("causal_multihead_self_attention__heads_split_interleaved", "heads split as interleaved columns",
              "view the projection as (..., seq, heads, w): head h is columns h*w:(h+1)*w, not every heads-th column",
              ("头按交错的列切分", "把投影视为 (..., seq, heads, w)：头 h 是第 h*w:(h+1)*w 列，而不是每隔 heads 列取一列"),
              ("Which columns form a head is fixed by how the weights were trained: seqlab, torch and Hugging Face all "
               "use contiguous blocks. With interleaved columns every head reads a mix of the trained heads' features.",
               "哪些列组成一个头，是由权重的训练方式决定的：seqlab、torch 和 Hugging Face 都用连续的列块。"
               "按交错的列切分，每个头读到的是训练好的各个头特征的混合。")),
     _mistake("causal_multihead_self_attention__heads_merged_interleaved", "heads concatenated interleaved",
              "transpose back to (..., seq, heads, w) and reshape to (..., seq, d_model): head h's output fills columns h*w:(h+1)*w",
              ("多个头的输出交错拼接", "转置回 (..., seq, heads, w) 再 reshape 为 (..., seq, d_model)：头 h 的输出填入第 h*w:(h+1)*w 列"),
              ("The output projection's input columns belong to heads in blocks, as the projections' output columns "
               "did. Merging in another order feeds each column of o_weight another head's feature.",
               "输出投影的输入列按块属于各个头，与投影的输出列一致。按别的顺序合并，o_weight 的每一列都会拿到另一个头的特征。")),
     _mistake("causal_multihead_self_attention__scaled_by_d_model", "scores scaled by 1/sqrt(d_model)",
              "each head's d_k is its width w = d_model / num_heads",
              ("得分按 1/sqrt(d_model) 缩放", "每个头的 d_k 是它的宽度 w = d_model / num_heads"),
              ("The scale keeps q . k at unit variance, and q . k sums over one head's w features, not over d_model. "
               "With 1/sqrt(d_model) the scores are sqrt(heads) times too small and attention blurs.",
               "缩放让 q . k 保持单位方差，而 q . k 只在一个头的 w 个特征上求和，不是 d_model 个。"
               "用 1/sqrt(d_model) 时得分小了 sqrt(heads) 倍，注意力变得模糊。")),
     _mistake("causal_multihead_self_attention__causal_mask_excludes_current",
              "causal mask off by one: the current position excluded", "position i attends to 0..i, itself included",
              ("因果掩码差一：排除了当前位置", "位置 i 关注 0..i，包括它自己"),
              ("The causal mask hides the FUTURE; position i's own token is known. Without it position 0 sees no key.",
               "因果掩码隐藏的是未来；位置 i 自己的词元是已知的。排除它之后，位置 0 一个键也看不到。"),
              recognise=matches_where_finite("causal_multihead_self_attention__causal_mask_excludes_current")),
     _mistake("causal_multihead_self_attention__causal_mask_includes_next",
              "causal mask off by one: the next (future) position included", "position i must not see i+1",
              ("因果掩码差一：包含了下一个（未来的）位置", "位置 i 不能看到 i+1"),
              ("Seeing token i+1 lets the model copy the answer it should predict: training looks excellent and "
               "generation fails.",
               "看到词元 i+1 就能照抄本该预测的答案：训练看起来很好，生成却失败。")),
     _mistake("causal_multihead_self_attention__no_causal_mask", "no causal mask",
              "hide the keys after each query: scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(), -inf)",
              ("没有因果掩码", "隐藏每个查询之后的键：scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(), -inf)"),
              ("A language model predicts each token from the ones before it; without the causal mask every position "
               "reads the whole sequence, including the tokens it is trained to predict.",
               "语言模型根据前面的词元预测每个词元；没有因果掩码，每个位置都能读到整个序列，包括它要预测的词元。")),
     _mistake("causal_multihead_self_attention__no_output_projection", "the output projection is missing",
              "after concatenating the heads, multiply by o_weight.T",
              ("缺少输出投影", "拼接各个头之后，乘以 o_weight.T"),
              ("Each head's output lives in its own block of columns; the output projection mixes the heads and maps "
               "the result back into the residual stream's basis.",
               "每个头的输出位于各自的列块中；输出投影把各个头混合起来，并映射回残差流的基底。")),
     _mistake("causal_multihead_self_attention__weights_not_transposed", "the weights used without .T",
              "torch's (out, in) layout means Q = x @ q_weight.T; x @ q_weight uses the transposed matrix",
              ("权重没有转置", "torch 的 (out, in) 布局意味着 Q = x @ q_weight.T；x @ q_weight 用的是转置后的矩阵"),
              ("nn.Linear stores its weight as (out_features, in_features) and computes x @ W.T. With square weights "
               "x @ W runs without an error but applies the transpose, a different linear map.",
               "nn.Linear 把权重存为 (out_features, in_features)，计算 x @ W.T。权重是方阵时 x @ W 不会报错，"
               "但用的是转置矩阵，是另一个线性映射。")),
     _sentence("causal_multihead_self_attention", "batched", "a Python loop over heads or positions",
               "batch the heads and positions: view the projections as (..., seq, heads, w), transpose to "
               "(..., heads, seq, w), and compute every head's scores in one matmul",
               ("对头或位置用了 Python 循环", "把头和位置批量处理：把投影视为 (..., seq, heads, w)，转置成 (..., heads, seq, w)，"
                "用一次矩阵乘法算出所有头的得分"),
               ("A loop over heads launches the same small kernels once per head, so on a GPU the time grows with the "
                "heads while the hardware idles; as one batched matmul the heads cost almost nothing extra. The check "
                "counts the tensor operations with 2 and with 8 heads (and 4 and 16 positions): batched code runs the "
                "same number.",
                "对头循环会为每个头重复启动同样的小内核，在 GPU 上耗时随头数增长而硬件却闲着；合成一次批量矩阵乘法，"
                "多几个头几乎不增加开销。本检查数出 2 个头和 8 个头（以及 4 个和 16 个位置）时的张量运算次数：批量的代码次数相同。")),
     _leading_dims_mistake("causal_multihead_self_attention"),
     _dtype_mistake("causal_multihead_self_attention")),
    returns="a tensor of x's shape", axes={"": ("sequence", "position")},
    spec=(Spec("values (random inputs)", "Head h takes the contiguous columns h*w:(h+1)*w (w = d_model / num_heads: "
                                         "a view as (..., seq, heads, w));"),
          Spec("values (worked example)", "each head: causal scaled dot-product attention with scale 1/sqrt(w); "
                                          "concatenate the heads in order;"),
          Spec("leading dims", "x may have no batch dims (seq, d_model) or several (batch, group, seq, d_model).",
               lambda: [Case("x (seq, d_model), no batch dims", _mhsa_args((5, 8), 2, 140)),
                        Case("x (batch, group, seq, d_model)", _mhsa_args((2, 2, 4, 8), 2, 141))]),
          Spec("projection", "output = concat @ o_weight.T -> (batch..., seq, d_model).",
               lambda: [Case("4 heads of width 4", _mhsa_args((2, 5, 16), 4, 142))]),
          Spec("dtype", "The output has x's dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 x and weights", _f32(*_mhsa_args((2, 4, 8), 2, 143)))], same_dtype_and_values),
          Spec("inputs unchanged", "x and the weights are not changed."),
          Spec("batched", "No loop over heads or positions: batched ops.",
               lambda: [Case("2 heads", _mhsa_args((2, 5, 16), 2, 144)), _grown("8 heads", _mhsa_args((2, 5, 16), 8, 144)),
                        Case("4 positions", _mhsa_args((2, 4, 8), 2, 145)), _grown("16 positions", _mhsa_args((2, 16, 8), 2, 145))],
               ops_do_not_grow),
          Spec("rules", _rule(_F, _SOFTMAX_RULE, _LAYERS))),
    rules={"forbid": ["functional", "attention", "softmax", "layers"]})


# --- SwiGLU ------------------------------------------------------------------------------------------------------
def _swiglu_args(shape, d_ff, seed):
    d = shape[-1]
    return (_randn(*shape, seed=seed), _randn(d_ff, d, seed=seed + 10, scale=d ** -0.5),
            _randn(d, d_ff, seed=seed + 20, scale=d_ff ** -0.5), _randn(d_ff, d, seed=seed + 30, scale=d ** -0.5))


def _swiglu_cases():
    return numbered_cases(lambda k, seed, shape, d_ff: (_swiglu_args(shape, d_ff, seed), {}),
                          ((0, (2, 4), 6), (1, (2, 3, 8), 16), (2, (5, 6), 12)))


SWIGLU = _torch_exercise(
    "swiglu", "SwiGLU feed-forward (PyTorch)", "SwiGLU 前馈网络（PyTorch）", "swiglu(x, w1_weight, w2_weight, w3_weight)",
    """w2(silu(w1 x) * w3 x), silu(a) = a * sigmoid(a); weights in torch's (out, in) layout: w1, w3 (d_ff, d_model),
    w2 (d_model, d_ff), so w1 x = x @ w1_weight.T. x (..., d_model) -> (..., d_model).
    x may have no leading dims (d_model,) or several.
    The output has x's dtype: float32 in, float32 out.
    x and the weights are not changed.
    """ + _rule(_F + " (silu included)", _LAYERS),
    _ref("swiglu"), _swiglu_cases,
    (_mistake("swiglu__sigmoid_instead_of_silu", "sigmoid instead of SiLU",
              "SiLU(a) = a * sigmoid(a); sigmoid(a) alone is GLU's gate",
              ("用了 sigmoid 而不是 SiLU", "SiLU(a) = a * sigmoid(a)；单独的 sigmoid(a) 是 GLU 的门"),
              ("GLU gates with sigmoid(a), SwiGLU with SiLU(a) = a * sigmoid(a) (Shazeer, 2020). The sigmoid gate is "
               "bounded in (0, 1); SiLU is not, and the trained weights assume SiLU's shape.",
               "GLU 用 sigmoid(a) 做门，SwiGLU 用 SiLU(a) = a * sigmoid(a)（Shazeer，2020）。sigmoid 门限制在 (0, 1) 内；"
               "SiLU 没有这个限制，训练好的权重依赖的是 SiLU 的形状。")),
     _mistake("swiglu__gate_on_the_other_branch", "the SiLU on the w3 branch",
              "the SiLU goes on w1 x; w3 x is the linear branch it multiplies",
              ("SiLU 放在了 w3 分支上", "SiLU 作用在 w1 x 上；w3 x 是与它相乘的线性分支"),
              ("The two branches are not symmetric in a checkpoint: w1 was trained as the gate. Swapping them applies "
               "the nonlinearity to the other matrix's features.",
               "在检查点中两个分支并不对称：w1 是作为门训练的。对调之后，非线性作用到了另一个矩阵的特征上。")),
     _mistake("swiglu__no_gate", "the w3 branch is missing", "multiply SiLU(w1 x) elementwise by w3 x before w2",
              ("缺少 w3 分支", "在乘 w2 之前，把 SiLU(w1 x) 与 w3 x 逐元素相乘"),
              ("Without w3 the layer is an ordinary SiLU MLP: the gating, which is what SwiGLU adds, is gone.",
               "没有 w3，这一层就是普通的 SiLU 多层感知机：SwiGLU 所增加的门控没有了。")),
     _mistake("swiglu__silu_after_the_product", "the SiLU applied after multiplying the branches",
              "silu(w1 x) * w3 x: the SiLU acts on w1 x alone, then the product",
              ("在两个分支相乘之后才用 SiLU", "silu(w1 x) * w3 x：SiLU 只作用于 w1 x，然后再相乘"),
              ("The gate is silu(w1 x), a function of one branch that scales the other. Applied to the product, the "
               "nonlinearity sees both branches at once, a different function.",
               "门是 silu(w1 x)，是一个分支的函数，用来缩放另一个分支。作用在乘积上，非线性同时看到两个分支，是另一个函数。")),
     _leading_dims_mistake("swiglu"),
     _dtype_mistake("swiglu")),
    returns="a tensor of x's shape",
    spec=(Spec("values (random inputs)", "w2(silu(w1 x) * w3 x), silu(a) = a * sigmoid(a);"),
          Spec("shapes and types", "weights in torch's (out, in) layout: w1, w3 (d_ff, d_model), w2 (d_model, d_ff), so "
                                   "w1 x = x @ w1_weight.T."),
          Spec("leading dims", "x may have no leading dims (d_model,) or several.",
               lambda: [Case("x (d_model,)", _swiglu_args((4,), 6, 150)),
                        Case("x with three leading dims", _swiglu_args((2, 2, 3, 4), 10, 151))]),
          Spec("dtype", "The output has x's dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 x and weights", _f32(*_swiglu_args((3, 4), 8, 152)))], same_dtype_and_values),
          Spec("inputs unchanged", "x and the weights are not changed."),
          Spec("rules", _rule(_F + " (silu included)", _LAYERS))),
    rules={"forbid": ["functional", "silu", "layers"]})


# --- the Transformer block and language model ---------------------------------------------------------------------
CHANGED = " (its last position changed)"


def _block_weights(d_model, d_ff, seed, prefix=""):
    shapes = {"ln1.weight": (d_model,), "attn.q_proj.weight": (d_model, d_model), "attn.k_proj.weight": (d_model, d_model),
              "attn.v_proj.weight": (d_model, d_model), "attn.output_proj.weight": (d_model, d_model),
              "ln2.weight": (d_model,), "ffn.w1.weight": (d_ff, d_model), "ffn.w2.weight": (d_model, d_ff),
              "ffn.w3.weight": (d_ff, d_model)}
    weights = {}
    for i, (name, shape) in enumerate(shapes.items()):
        if len(shape) == 1:                                # a norm's gain: near 1, not 1, so a missing one shows
            weights[prefix + name] = 1 + _randn(*shape, seed=seed + i, scale=0.2)
        else:
            weights[prefix + name] = _randn(*shape, seed=seed + i, scale=shape[1] ** -0.5)
    return weights


def _changed_last(case, change):
    """The case again with its last position changed: a causal model's earlier outputs stay the same."""
    args = list(case.args)
    args[0] = change(args[0].clone())
    return Case(case.label + CHANGED, tuple(args), dict(case.kwargs))


def _block_args(shape, heads, d_ff, seed, x_scale=1.0):
    return (_randn(*shape, seed=seed + 100, scale=x_scale), _block_weights(shape[-1], d_ff, seed * 20), heads)


def _block_cases():
    cases = numbered_cases(
        lambda k, seed, shape, heads, d_ff, theta: (_block_args(shape, heads, d_ff, seed),
                                                    {} if theta == 10000.0 else {"theta": theta}),
        ((0, (1, 3, 4), 2, 8, 10000.0), (1, (2, 5, 8), 2, 16, 100.0), (2, (2, 6, 12), 3, 20, 10000.0)))

    def change(x):
        x[..., -1, :] = x[..., -1, :] * -2 + 1
        return x
    cases.append(_changed_last(cases[-1], change))
    return cases


def _causality(cases, outputs):
    """Changing the last position of the input changes no earlier position of the output."""
    import torch
    by_label = dict(zip((c.label for c in cases), outputs))
    for case, out in zip(cases, outputs):
        if not case.label.endswith(CHANGED) or case.label[:-len(CHANGED)] not in by_label:
            continue
        before = by_label[case.label[:-len(CHANGED)]]
        earlier = (before[..., :-1, :] - out[..., :-1, :]).abs().amax(dim=(0, -1))
        moved = torch.nonzero(earlier > 1e-9).flatten().tolist()
        if moved:
            return (f"on {case.label}: changing only the last position changed the output at position {moved[0]}: "
                    "a position must not see later ones (keep keys j <= i in the causal mask)")
    return None


_BLOCK_KEYS = """weights, seqlab.model.TransformerBlock's state-dict names, torch's (out, in) layout (Q = h @ W.T):
      "ln1.weight", "ln2.weight" (d_model,): the RMSNorm gains;
      "attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight", "attn.output_proj.weight" (d_model, d_model);
      "ffn.w1.weight", "ffn.w3.weight" (d_ff, d_model), "ffn.w2.weight" (d_model, d_ff): SwiGLU."""
_MODEL_RULE = _rule(_F, _SOFTMAX_RULE, "no torch.rms_norm", _LAYERS)
_MODEL_FORBID = ["functional", "attention", "softmax", "silu", "rms_norm", "layers"]


def _rope_why(zh=False):
    return ("旋转位置编码按位置 i 把每个查询和键旋转 i 个角度单位，于是 q_i . k_j 只依赖 i - j。"
            "配对方式、起始位置和 theta 都是与权重一起训练出来的约定：任何一个不同，同样的权重就会关注到别的位置。") if zh else (
        "RoPE rotates each query and key by an angle proportional to its position i, so q_i . k_j depends on i - j "
        "only. The pairing, the first position and theta are conventions trained into the weights: change one and "
        "the same weights attend to other positions.")


TRANSFORMER_BLOCK = _torch_exercise(
    "transformer_block", "The Transformer block (PyTorch)", "Transformer 块（PyTorch）",
    "transformer_block(x, weights, num_heads, theta=10000.0, eps=1e-5)",
    """One pre-norm block, x (batch, seq, d_model) -> (batch, seq, d_model):
        z = x + attn(rms_norm(x, ln1));  y = z + swiglu(rms_norm(z, ln2))   (rms_norm with eps inside the root)
    attn: causal multi-head self-attention (heads = contiguous column blocks of width w = d_model / num_heads),
    with RoPE on each head's queries and keys: pair (2k, 2k+1) at position i rotated by i * theta^(-2k/w),
    positions 0..seq-1; scale 1/sqrt(w); then the output projection.
    Any batch and seq: compute the RoPE angles for x's own positions.
    Use the theta and eps you are given.
    The output has x's dtype: float32 in, float32 out.
    x and the weights are not changed.
    """ + _BLOCK_KEYS + "\n    Your rms_norm, rotate_pairs and swiglu are its parts, and causal_multihead_self_attention with RoPE added"
                    "\n    (import them from your other files: from rms_norm import rms_norm).\n    " + _MODEL_RULE,
    _ref("transformer_block"), _block_cases,
    (_mistake("transformer_block__post_norm", "the norm after the sublayer (post-norm) instead of before",
              "this block is pre-norm: z = x + attn(norm(x)), not z = norm(x + attn(x)); the residual path stays un-normalised",
              ("归一化放在子层之后（后置归一化）而不是之前", "本块是前置归一化：z = x + attn(norm(x))，而不是 z = norm(x + attn(x))；残差通路保持不归一化"),
              ("Post-norm (the 2017 Transformer) normalises the residual stream itself after every sublayer; pre-norm "
               "(GPT-2, Llama) normalises only each sublayer's input, leaving a clean residual path that makes deep "
               "stacks train without warm-up tricks. They are different functions of the same weights.",
               "后置归一化（2017 年的 Transformer）在每个子层之后对残差流本身归一化；前置归一化（GPT-2、Llama）只对子层的输入归一化，"
               "留下干净的残差通路，使深层网络无需特别的预热技巧也能训练。它们是同一组权重的不同函数。")),
     _mistake("transformer_block__no_attention_residual", "the residual around the attention is missing",
              "add the input back: z = x + attn(rms_norm(x))",
              ("注意力外面缺少残差连接", "把输入加回来：z = x + attn(rms_norm(x))"),
              ("The residual stream carries each token's information past the sublayer; each sublayer only adds to "
               "it. Without the residual the attention's output replaces the token's own vector.",
               "残差流把每个词元的信息带过子层；每个子层只是往上面加东西。没有残差，注意力的输出会取代词元自己的向量。")),
     _mistake("transformer_block__no_ffn_residual", "the residual around the feed-forward is missing",
              "add z back: y = z + swiglu(rms_norm(z))",
              ("前馈网络外面缺少残差连接", "把 z 加回来：y = z + swiglu(rms_norm(z))"),
              ("The same as for the attention: the feed-forward layer adds to the residual stream, it does not "
               "replace it; without the residual its output replaces the vector the attention left.",
               "与注意力相同：前馈层是往残差流上加东西，而不是取代它；没有残差，前馈层的输出会取代注意力之后的向量。")),
     _mistake("transformer_block__causal_mask_excludes_current", "causal mask off by one: the current position excluded",
              "position i attends to 0..i, itself included (tril with diagonal 0)",
              ("因果掩码差一：排除了当前位置", "位置 i 关注 0..i，包括它自己（tril，diagonal 为 0）"),
              ("The causal mask hides the FUTURE; a position's own token is known, and position 0 has no other key.",
               "因果掩码隐藏的是未来；位置自己的词元是已知的，而位置 0 没有别的键。"),
              recognise=matches_where_finite("transformer_block__causal_mask_excludes_current")),
     _mistake("transformer_block__causal_mask_includes_next", "causal mask off by one: the next (future) position included",
              "position i must not see i+1: keep j <= i",
              ("因果掩码差一：包含了下一个（未来的）位置", "位置 i 不能看到 i+1：保留 j <= i"),
              ("Seeing position i+1 lets the model read the token it is trained to predict: the loss falls fast and "
               "generation fails.",
               "看到位置 i+1 就能读到要预测的词元：损失下降很快，生成却失败。")),
     _mistake("transformer_block__rope_half_split", "RoPE on half-split pairs",
              "this exercise uses adjacent pairs (2k, 2k+1); your code uses half-split pairs (k, k + w/2), GPT-NeoX's "
              "and Hugging Face Llama's rotate_half",
              ("旋转位置编码用了前后两半配对", "本练习使用相邻的分量对 (2k, 2k+1)；你的代码用前后两半配对 (k, k + w/2)，即 GPT-NeoX 和 Hugging Face Llama 的 rotate_half"),
              (_rope_why(), _rope_why(True)),
              convention="half-split pairs (k, k + w/2): GPT-NeoX's and Hugging Face Llama's rotate_half"),
     _mistake("transformer_block__scaled_by_d_model", "scores scaled by 1/sqrt(d_model)",
              "each head's scores are divided by sqrt(w), its own width, not sqrt(d_model)",
              ("得分按 1/sqrt(d_model) 缩放", "每个头的得分除以它自己的宽度 sqrt(w)，而不是 sqrt(d_model)"),
              ("q . k sums over one head's w features, so its variance grows with w, not with d_model; the wrong scale "
               "makes every head's attention blurrier by sqrt(heads).",
               "q . k 只在一个头的 w 个特征上求和，方差随 w 而不是 d_model 增长；错误的缩放让每个头的注意力模糊 sqrt(heads) 倍。")),
     _mistake("transformer_block__norm_gains_swapped", "ln1 and ln2 swapped",
              "ln1 normalises the attention's input, ln2 the feed-forward's",
              ("ln1 和 ln2 用反了", "ln1 归一化注意力的输入，ln2 归一化前馈网络的输入"),
              ("Each norm's gain is trained for the sublayer it feeds; swapped, both sublayers see inputs scaled for "
               "the other one.",
               "每个归一化的增益是为它所连接的子层训练的；用反之后，两个子层看到的都是为另一个子层缩放的输入。")),
     _sentence("transformer_block", "long sequence", "right only for short sequences",
               "compute the RoPE angles and the causal mask for seq = x.shape[-2], whatever it is, not for a fixed length",
               ("只对短序列正确", "按 seq = x.shape[-2] 计算旋转位置编码的角度和因果掩码，无论它是多少，而不是按固定长度"),
               ("A model is trained on one context length and then run on shorter and longer ones; anything sized for "
                "the test's length breaks on the first longer input.",
                "模型在一种上下文长度上训练，之后在更短和更长的序列上运行；按测试长度设定大小的任何东西，遇到第一个更长的输入就会出错。")),
     _sentence("transformer_block", "theta and eps", "theta or eps not taken from the arguments",
               "use theta for RoPE's angles and eps in both RMSNorms, as given",
               ("theta 或 eps 没有用传入的参数", "旋转位置编码的角度用传入的 theta，两个 RMSNorm 都用传入的 eps"),
               ("Llama 3 uses theta = 500000, others 10000; eps differs too. A hard-coded value makes a checkpoint "
                "trained with another one compute something else.",
                "Llama 3 用 theta = 500000，其他模型用 10000；eps 也各不相同。写死的值会让用别的值训练的检查点算出不同的结果。")),
     _dtype_mistake("transformer_block")),
    returns="a tensor of x's shape", relations=_causality, axes={"": ("sequence", "position")},
    spec=(Spec("values (random inputs)", "z = x + attn(rms_norm(x, ln1)); y = z + swiglu(rms_norm(z, ln2))"),
          Spec("values (worked example)", "with RoPE on each head's queries and keys: pair (2k, 2k+1) at position i "
                                          "rotated by i * theta^(-2k/w),"),
          Spec("invariants", "attn: causal multi-head self-attention"),
          Spec("long sequence", "Any batch and seq: compute the RoPE angles for x's own positions.",
               lambda: [Case("seq 24", _block_args((1, 24, 8), 2, 12, 160))]),
          Spec("theta and eps", "Use the theta and eps you are given.",
               lambda: [Case("theta 500, eps 0.1, small x", _block_args((2, 5, 8), 2, 12, 161, x_scale=0.1),
                             {"theta": 500.0, "eps": 0.1})]),
          Spec("dtype", "The output has x's dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 x and weights", (*_f32(_block_args((2, 4, 8), 2, 12, 162)[0]),
                                                        _f32(_block_args((2, 4, 8), 2, 12, 162)[1]), 2))],
               same_dtype_and_values),
          Spec("inputs unchanged", "x and the weights are not changed."),
          Spec("rules", _MODEL_RULE)),
    rules={"forbid": _MODEL_FORBID})


def _lm_weights(vocab, d_model, d_ff, num_layers, seed):
    weights = {"token_embeddings.weight": _randn(vocab, d_model, seed=seed)}
    for i in range(num_layers):
        weights.update(_block_weights(d_model, d_ff, seed + 50 * (i + 1), prefix=f"layers.{i}."))
    weights["ln_final.weight"] = 1 + _randn(d_model, seed=seed + 1, scale=0.2)
    weights["lm_head.weight"] = _randn(vocab, d_model, seed=seed + 2, scale=d_model ** -0.5)
    return weights


def _lm_args(seed, batch, seq, vocab, d_model, layers, heads, d_ff):
    import torch
    return (torch.randint(0, vocab, (batch, seq), generator=_gen(seed + 200)),
            _lm_weights(vocab, d_model, d_ff, layers, seed * 1000), layers, heads)


def _lm_cases():
    cases = numbered_cases(lambda k, *setting: (_lm_args(*setting), {}),
                           ((0, 1, 4, 7, 4, 1, 2, 8), (1, 2, 6, 11, 8, 2, 2, 12), (2, 2, 5, 13, 12, 2, 3, 16)))
    vocab = cases[-1].args[1]["token_embeddings.weight"].shape[0]

    def change(ids):
        ids[..., -1] = (ids[..., -1] + 1) % vocab
        return ids
    cases.append(_changed_last(cases[-1], change))
    return cases


def _log_probabilities(ev) -> str | None:
    """The output is log-softmax(logits) or softmax(logits) of the reference's logits."""
    import torch
    for i in ev.usable("all"):
        if not ev.wrong(i, ()):
            continue
        logits, out = ev.expected[i].double(), ev.outputs[i].double()
        shifted = logits - logits.amax(-1, keepdim=True)
        log_p = shifted - shifted.exp().sum(-1, keepdim=True).log()
        if torch.allclose(out, log_p, rtol=1e-5, atol=1e-7):
            return f"on {ev.cases[i].label} the output is log-softmax of the logits: log-probabilities"
        if torch.allclose(out, log_p.exp(), rtol=1e-5, atol=1e-7):
            return f"on {ev.cases[i].label} the output is softmax of the logits: probabilities"
        return None
    return None


TRANSFORMER_LM = _torch_exercise(
    "transformer_lm", "The Transformer language model (PyTorch)", "Transformer 语言模型（PyTorch）",
    "transformer_lm(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5)",
    """ids (batch, seq) int64 -> logits (batch, seq, vocab), seqlab.model.TransformerLM's forward:
        h = token_embeddings[ids]; h = block_i(h) for i = 0..num_layers-1 (your transformer_block);
        logits = rms_norm(h, ln_final) @ lm_head.T     (the final norm; the output layer is NOT tied)
    weights, the state-dict names: "token_embeddings.weight" (vocab, d_model); "layers.{i}." + each key of
    transformer_block's weights; "ln_final.weight" (d_model,); "lm_head.weight" (vocab, d_model).
    Return the logits, not probabilities.
    Use num_layers, theta and eps as given.
    The logits have the weights' dtype: float32 in, float32 out.
    ids and the weights are not changed.
    """ + _MODEL_RULE,
    _ref("transformer_lm"), _lm_cases,
    (_mistake("transformer_lm__no_final_norm", "no final norm",
              "a pre-norm stack ends with one more RMSNorm (ln_final) before the output layer",
              ("缺少最后的归一化", "前置归一化的层堆叠在输出层之前还要再做一次 RMSNorm (ln_final)"),
              ("In a pre-norm model the residual stream itself is never normalised inside the blocks; its size grows "
               "with depth. The final norm puts it back on the scale the output layer was trained on.",
               "在前置归一化的模型里，残差流本身在块内从不归一化，其大小随深度增长。最后的归一化把它恢复到输出层训练时的尺度。")),
     _mistake("transformer_lm__tied_output", "the output layer tied to the embedding",
              "this model's output layer is its own matrix: logits = h @ lm_head.weight.T, not the embedding's",
              ("输出层与嵌入层共享了权重", "本模型的输出层是单独的矩阵：logits = h @ lm_head.weight.T，而不是嵌入矩阵"),
              ("Tying the output layer to the embedding (GPT-2) is a valid design, but this model, like Llama, has a "
               "separate lm_head; with tied weights it ignores a trained matrix.",
               "输出层与嵌入层共享权重（GPT-2）是一种有效的设计，但本模型与 Llama 一样有单独的 lm_head；共享权重就忽略了一个训练好的矩阵。")),
     _mistake("transformer_lm__rope_not_applied", "positions (RoPE) not applied",
              "rotate each head's queries and keys by RoPE before the scores: without it the model cannot tell positions apart",
              ("没有应用位置（旋转位置编码）", "在计算得分之前用旋转位置编码旋转每个头的查询和键：没有它，模型分不清位置"),
              ("Attention itself is blind to order: without RoPE a causal model only knows how many tokens came "
               "before, not which came where.",
               "注意力本身不关心顺序：没有旋转位置编码，因果模型只知道前面有多少个词元，不知道哪个在哪里。")),
     _mistake("transformer_lm__softmax_applied", "probabilities returned instead of logits",
              "return the logits: the loss (cross-entropy) applies the log-softmax itself",
              ("返回了概率而不是 logits", "返回 logits：损失（交叉熵）自己会做 log-softmax"),
              ("The model returns logits so that the loss can compute log-softmax stably in one step and sampling can "
               "apply a temperature; probabilities lose precision for unlikely tokens and would be normalised twice.",
               "模型返回 logits，损失才能一步稳定地计算 log-softmax，采样才能加温度；概率会让不太可能的词元丢失精度，还会被归一化两次。"),
              recognise=_log_probabilities),
     _mistake("transformer_lm__log_probabilities_returned", "log-probabilities returned instead of logits",
              "return the logits themselves: logits = rms_norm(h, ln_final) @ lm_head.T, with no log-softmax",
              ("返回了对数概率而不是 logits", "直接返回 logits：logits = rms_norm(h, ln_final) @ lm_head.T，不做 log-softmax"),
              ("Log-probabilities are logits shifted per row, so the loss still works, but the model's contract is "
               "logits: sampling with a temperature and tools reading the logits expect them unshifted.",
               "对数概率就是每行平移了的 logits，所以损失仍然可用，但模型约定返回的是 logits：带温度的采样和读取 logits 的工具期望未平移的值。"),
              recognise=_log_probabilities),
     _mistake("transformer_lm__layers_in_reverse_order", "the layers applied in reverse order",
              "apply layers.0 first, then layers.1, ..., layers.{num_layers-1}",
              ("层的顺序反了", "先用 layers.0，再用 layers.1，……，最后是 layers.{num_layers-1}"),
              ("Each layer was trained on the output of the one below it; in another order every layer reads inputs it "
               "has never seen.",
               "每一层都是在下面那一层的输出上训练的；换了顺序，每一层读到的都是它从未见过的输入。")),
     _mistake("transformer_lm__only_the_first_layer", "only the first layer applied",
              "loop over all num_layers blocks: for i in range(num_layers)",
              ("只用了第一层", "循环所有 num_layers 个块：for i in range(num_layers)"),
              ("The depth is the model: each block refines the residual stream, and the output layer was trained on "
               "the last block's output.",
               "深度就是模型本身：每个块都在精炼残差流，而输出层是在最后一个块的输出上训练的。")),
     _sentence("transformer_lm", "as given", "num_layers, theta or eps not used as given",
               "run num_layers blocks with the theta and eps you are given, in each block and in the final norm",
               ("没有按传入的值使用 num_layers、theta 或 eps", "用传入的 theta 和 eps 运行 num_layers 个块，每个块和最后的归一化都要用"),
               ("These are the model's configuration, saved with its weights: a checkpoint only computes what it was "
                "trained to compute with its own values.",
                "这些是模型的配置，与权重一起保存：检查点只有用它自己的这些值，才能算出训练时的结果。")),
     _dtype_mistake("transformer_lm", "the weights'")),
    returns="a tensor (batch, seq, vocab)", relations=_causality, axes={"": ("sequence", "position")},
    spec=(Spec("values (random inputs)", "h = token_embeddings[ids]; h = block_i(h) for i = 0..num_layers-1"),
          Spec("values (worked example)", "Return the logits, not probabilities."),
          Spec("invariants", "ids (batch, seq) int64 -> logits (batch, seq, vocab)"),
          Spec("as given", "Use num_layers, theta and eps as given.",
               lambda: [Case("3 layers, theta 300, eps 0.05", _lm_args(3, 2, 4, 9, 8, 3, 2, 12), {"theta": 300.0, "eps": 0.05})]),
          Spec("dtype", "The logits have the weights' dtype: " + FLOAT32 + ".",
               lambda: [Case("float32 weights", _lm_f32(_lm_args(4, 1, 4, 7, 8, 2, 2, 12)))], same_dtype_and_values),
          Spec("inputs unchanged", "ids and the weights are not changed."),
          Spec("rules", _MODEL_RULE)),
    rules={"forbid": _MODEL_FORBID})


def _lm_f32(args):
    ids, weights, *rest = args
    return (ids, _f32(weights), *rest)


EXERCISES: tuple[Exercise, ...] = (SOFTMAX, RMS_NORM, ROTATE_PAIRS, SDPA, CROSS_ENTROPY, LR_COSINE_SCHEDULE, ADAMW_STEP,
                                   GET_BATCH, CAUSAL_MHSA, SWIGLU, TRANSFORMER_BLOCK, TRANSFORMER_LM)
