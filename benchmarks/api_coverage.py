"""How much of PyTorch's public API gradlab has: every public name, with its parameter names, and a test.

Run ``python benchmarks/api_coverage.py`` (needs torch). For each of torch, torch.Tensor, torch.nn,
torch.nn.functional, torch.linalg, torch.autograd, torch.optim, torch.optim.lr_scheduler and
torch.utils.data it lists every public name and sorts it into one of:

* ``out of scope`` -- a family gradlab does not build, each with its reason (see ``OUT_OF_SCOPE``); a
                      name gradlab has counts as in scope even when its family is excluded
                      (``Tensor.conj`` of a real tensor, say);
* ``covered``      -- gradlab has it, accepts every parameter name PyTorch documents for it, and a test
                      in tests/ mentions it;
* ``no test``      -- gradlab has it, but no test mentions it;
* ``parameters``   -- gradlab has it, but some of PyTorch's parameter names are missing;
* ``missing``      -- gradlab does not have it.

PyTorch's parameter names come from its docstrings (``sum(input, dim, keepdim=False, *, dtype=None)``),
where a builtin has no Python signature. ``input``/``self`` (always positional in practice) and
``out=`` (gradlab's ops return new tensors; none takes ``out=``) are not asked for.
``--list missing`` (or ``parameters``, ``no test``, ``out of scope``) prints those names.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import keyword
import re
import sys
import types
from pathlib import Path

# The checkout to measure: the current directory when it is one (so a worktree measures itself), else this one.
ROOT = Path.cwd() if (Path.cwd() / "gradlab").is_dir() else Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402  (the reference: this report exists only where torch is importable)
import torch.nn.functional  # noqa: E402,F401
import torch.optim.lr_scheduler  # noqa: E402,F401
import torch.utils.data  # noqa: E402,F401

import gradlab  # noqa: E402
import gradlab.nn.functional  # noqa: E402,F401
import gradlab.optim.lr_scheduler  # noqa: E402,F401
import gradlab.utils.data  # noqa: E402,F401

AREAS = {  # area name -> (PyTorch object, path of gradlab's counterpart)
    "torch": (torch, "gradlab"),
    "torch.Tensor": (torch.Tensor, "gradlab.Tensor"),
    "torch.nn": (torch.nn, "gradlab.nn"),
    "torch.nn.functional": (torch.nn.functional, "gradlab.nn.functional"),
    "torch.linalg": (torch.linalg, "gradlab.linalg"),
    "torch.autograd": (torch.autograd, "gradlab.autograd"),
    "torch.optim": (torch.optim, "gradlab.optim"),
    "torch.optim.lr_scheduler": (torch.optim.lr_scheduler, "gradlab.optim.lr_scheduler"),
    "torch.utils.data": (torch.utils.data, "gradlab.utils.data"),
}

# (reason, pattern[, areas]): a name matching the pattern (a full-match regex) is out of scope, for that reason.
OUT_OF_SCOPE = [
    ("sparse tensors", r".*(sparse|_coo|coo_|csr|csc|bsr|bsc|crow_|ccol_|col_indices|row_indices).*|coalesce|"
                       r"is_coalesced|to_dense|dense_dim|indices|values|indices_copy|values_copy|smm|spmm|hspmm|"
                       r"dsmm|hsmm|saddmm|sspaddmm|SparseAdam|segment_reduce"),
    ("quantized tensors", r".*(quantiz|qint|quint|qscheme|per_channel_|per_tensor_|fbgemm|fake_quant).*|qat|q_.*|"
                          r"int_repr|choose_qparams_optimized|intrinsic|dequantize|is_quantized|ao"),
    ("complex dtypes", r".*(complex|conj).*|cfloat|cdouble|chalf|real|imag|angle|polar|view_as_real.*|resolve_neg|"
                       r"is_neg|isreal|eig|eigvals|fft|stft|istft"),
    ("sub-byte and float8 dtypes (numpy has no array type for them)", r"float4_.*|float8_.*|bits.*|u?int[1-7]"),
    ("torch.jit / fx / export / onnx internals",
     r"jit|fx|export|onnx|compiler|package|library|classes|ops|Script.*|.*Type|Type|AliasDb|Argument|"
     r"ArgumentSpec|Block|CallStack|Capsule|Code|CompilationUnit|CompleteArgumentSpec|ConcreteModuleType.*|"
     r"DeepCopyMemoTable|ErrorReport|ExecutionPlan|FileCheck|FunctionSchema|Future|Gradient|Graph|"
     r"GraphExecutorState|IODescriptor|InferredType|JITException|LiteScriptModule|LockingLogger|LoggerBase|"
     r"NoopLogger|OperatorInfo|Node|PyTorchFile(Reader|Writer)|StaticModule|Tag|TracingState|Use|Value|"
     r"Sym(Bool|Float|Int)|sym_.*|parse_ir|parse_schema|parse_type_comment|import_ir_module.*|"
     r"merge_type_from_type_comment|unify_type_list|fork|wait|futures|overrides|.*torch_function.*|"
     r"DisableTorchFunction.*|boolean_dispatch|BroadcastingList\d|hash_tensor|PRIVATE_OPS|ThroughputBenchmark|"
     r"Benchmark.*|(Des|S)erializationStorageContext|ScriptModuleSerializer|AVG|SUM|AggregationType|"
     r"BufferDict|slice_inverse|ScalingType|SwizzleType|is_view_replay_enabled|enforce_grad_layout_policy|"
     r"assert_int_or_pair|classproperty|cpp|FatalError"),
    ("functorch transforms (torch.func, vmap, control-flow operators): a second autograd system",
     r"func|vmap|cond|while_loop"),
    ("nested and masked tensors", r"nested|jagged|to_padded_tensor|is_nested|masked"),
    ("distributed collectives", r"is_distributed|SyncBatchNorm"),
    ("CUDA / cuDNN / MKL-DNN / MIOpen and other accelerators' internals",
     r"cudnn_.*|miopen_.*|mkldnn_.*|to_mkldnn|is_mkldnn|.*vulkan.*|mps|is_mps|xpu|is_xpu|mtia|is_mtia|ipu|is_ipu|"
     r"is_xla|is_maia|is_meta|accelerator|.*autocast_(ipu|xla|gpu).*|record_stream|Stream|Event|"
     r"AcceleratorError|OutOfMemoryError|has_(lapack|mkl|openmp|spectral)|compiled_with_cxx11_abi|"
     r"profiler_allow_cudagraph_cupti_lazy_reinit_cuda12|tf32_notes|cudnn_is_acceptable|pin_memory|is_pinned|"
     r"grouped_mm|scaled_(grouped_)?mm|LinearCrossEntropy.*|linear_cross_entropy"),
    ("storage, memory and dispatcher internals",
     r"share_memory_|is_shared|data_ptr|const_data_ptr|untyped_storage|storage|storage_type|is_set_to|set_|"
     r"DispatchKey.*|ExcludeDispatchKeyGuard|.*Storage|StorageBase|is_storage|prepare_multiprocessing_"
     r"environment|USE_GLOBAL_DEPS|USE_RTLD_GLOBAL_WITH_LIBTORCH|init_num_threads|from_file|get_file_path|"
     r"is_multithreading_enabled|set_multithreading_enabled|thread_safe_generator|empty_permuted|"
     r"nonzero_static|dim_order|grad_dtype|output_nr|module_load|swap_in_optimizer_params_and_state|"
     r"NestedIOFunction|reinforce|volatile"),
    ("ATen kernels behind nn modules and backward (use the nn / nn.functional form)",
     r"(native|batch_norm)_.*|.*_backward_.*|.*_with_counts|constant_pad_nd|conv_tbc|feature_dropout_?|"
     r"rnn_(relu|tanh)(_cell)?|gru_cell|lstm_cell|gru|lstm|affine_grid_generator|grid_sampler(_2d|_3d)?|"
     r"convolution|alpha_dropout_|feature_alpha_dropout_|embedding_renorm_|norm_except_dim|frobenius_norm"),
    ("the PyTorch profiler and Kineto (gradlab's lab shows time on the graph instead)",
     r"profiler|profiler_legacy|profiler_util|Profiler.*|kineto_available|DeviceType|monitor"),
    ("deprecated and removed upstream: DataPipes", r"DFIterDataPipe|DataChunk|IterDataPipe|MapDataPipe|datapipes|"
     r"functional_datapipe|graph|graph_settings|guaranteed_datapipes_determinism|non_deterministic|"
     r"runtime_validation|runtime_validation_disabled|argument_validation", ("torch.utils.data",)),
    ("deprecated legacy modules and documentation fragments",
     r"Container|NLLLoss2d|reproducibility_notes|sparse_support_notes|common_notes"),
]
_OUT_OF_SCOPE = [(rule[0], re.compile(rule[1]), rule[2] if len(rule) > 2 else None) for rule in OUT_OF_SCOPE]

# gradlab names that only share a spelling with an out-of-scope PyTorch name.
NAME_CLASHES = {("torch", "ops"): "gradlab.ops is gradlab's package of Functions, not torch.ops (the operator registry)"}

IGNORED_PARAMETERS = {"input", "self", "out", "args", "kwargs"}


def public_names(obj) -> list[str]:
    """The names a user can reach: public attributes, less other libraries' modules and typing helpers."""
    names = []
    for name in dir(obj):
        if name.startswith("_"):
            continue
        value = getattr(obj, name, None)
        if isinstance(value, types.ModuleType) and not value.__name__.startswith("torch"):
            continue  # e.g. torch.os, torch.nn.functional.math: imported modules, not API
        module = getattr(value, "__module__", None) if callable(value) else None
        if module is not None and not module.startswith("torch"):
            continue  # e.g. lr_scheduler.Counter (collections), bisect_right: imported helpers, not API
        if name in ("TYPE_CHECKING", "torch") or value is torch:
            continue  # typing's flag, and torch's names for itself
        if name in ("TYPE_CHECKING", "Callable", "Optional", "Any", "Literal", "Self", "SupportsFloat",
                    "TypedDict", "Mapping", "Sequence", "cast", "override", "overload", "partial", "inf",
                    "Tensor", "DType", "T") and obj is not torch and obj is not torch.Tensor:
            continue  # typing names and re-exported helpers inside submodules
        names.append(name)
    return names


def out_of_scope_reason(area: str, name: str) -> str | None:
    for reason, pattern, areas in _OUT_OF_SCOPE:
        if (areas is None or area in areas) and pattern.fullmatch(name):
            return reason
    return None


def resolve(path: str):
    obj = gradlab
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def torch_parameters(value, name: str) -> set[str]:
    """Every parameter name PyTorch documents for this callable (all its overloads)."""
    target = value.__init__ if inspect.isclass(value) else value
    try:
        params = set(inspect.signature(target).parameters)
        params.discard("args")
        params.discard("kwargs")
        if params:
            return {p for p in params - IGNORED_PARAMETERS if not p.startswith("_")}
    except (TypeError, ValueError):
        pass
    doc = getattr(value, "__doc__", None) or ""
    found = _documented_parameters(doc, name)
    schema = _schema_parameters(name)
    return {p for p in (found & schema if schema else found) - IGNORED_PARAMETERS if not p.startswith("_")}


_PRIM_OVERLOADS = {"int", "float", "complex", "bool", "str", "number", "Scalar_Scalar"}


def _schema_parameters(name: str) -> set[str]:
    """The argument names of the ATen operator behind a builtin (less its out= and TorchScript-only forms).

    Docstrings sometimes name a parameter differently from what the argument parser accepts
    (``Tensor.div(value)``); the schema is what a keyword call is checked against.
    """
    try:
        schemas = torch._C._jit_get_schemas_for_operator("aten::" + name.split(".")[-1])
    except RuntimeError:
        return set()
    names = set()
    for schema in schemas:
        if "out" in schema.overload_name or schema.overload_name in _PRIM_OVERLOADS:
            continue
        names.update(argument.name for argument in schema.arguments)
    return names


def _documented_parameters(doc: str, name: str) -> set[str]:
    """Parameter names in the signature lines of a builtin's docstring (one line per overload)."""
    found = set()
    short = name.split(".")[-1]
    for match in re.finditer(rf"(?m)^\s*(?:\.\. function:: )?(?:[\w.]+\.)?{re.escape(short)}\((.*?)\)\s*(?:->|$)", doc):
        for part in match.group(1).split(","):
            part = part.strip().lstrip("*")
            part = part.split("=")[0].split(":")[0].strip()
            if part.isidentifier() and not keyword.iskeyword(part):
                found.add(part)
    return found


def gradlab_accepts(value) -> tuple[set[str], bool]:
    """The parameter names gradlab's callable takes, and whether it takes any keyword (``**kwargs``)."""
    target = value.__init__ if inspect.isclass(value) else value
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return set(), True
    var_keyword = any(p.kind is p.VAR_KEYWORD for p in params.values())
    return set(params), var_keyword


def tests_text() -> str:
    return "\n".join(p.read_text() for p in sorted((ROOT / "tests").rglob("*.py")))


def name_templates(tests: str) -> list:
    """The names tests build with f-strings (getattr(nn, f"LPPool{nd}d")), as patterns a name can match."""
    templates = []
    for body in re.findall(r'f"([^"\n]*\{[^"\n]*)"', tests) + re.findall(r"f'([^'\n]*\{[^'\n]*)'", tests):
        parts = re.split(r"\{[^}]*\}", body)
        if re.fullmatch(r"[\w{}]+", re.sub(r"\{[^}]*\}", "{}", body)) and sum(map(len, parts)) >= 4:
            templates.append(re.compile(r"\w*".join(map(re.escape, parts))))
    return templates


def mentioned(name: str, tests: str, templates) -> bool:
    """A test names it outright (as a whole word), or builds its name from an f-string."""
    return name in _words(tests) or any(t.fullmatch(name) for t in templates)


@functools.lru_cache(maxsize=2)
def _words(text: str) -> frozenset:
    """Every whole word of ``text``: a name is mentioned when it is one (what ``\\bname\\b`` finds)."""
    return frozenset(re.findall(r"\w+", text))


def classify(area: str, torch_obj, gradlab_path: str, tests: str, templates=()) -> dict[str, list]:
    """Sort one area's names into the five groups; parameters entries are (name, missing params)."""
    groups = {"out of scope": [], "covered": [], "no test": [], "parameters": [], "missing": []}
    try:
        ours = resolve(gradlab_path)
    except AttributeError:
        ours = None
    for name in public_names(torch_obj):
        present = ours is not None and hasattr(ours, name) and (area, name) not in NAME_CLASHES
        reason = None if present else out_of_scope_reason(area, name)  # what gradlab has counts, whatever its family
        if reason:
            groups["out of scope"].append((name, reason))
            continue
        if not present:
            groups["missing"].append(name)
            continue
        theirs, mine = getattr(torch_obj, name), getattr(ours, name)
        if callable(theirs) and callable(mine) and not isinstance(theirs, types.ModuleType):
            accepted, any_keyword = gradlab_accepts(mine)
            absent = sorted(torch_parameters(theirs, name) - accepted) if not any_keyword else []
            if absent:
                groups["parameters"].append((name, absent))
                continue
        if not mentioned(name, tests, templates):
            groups["no test"].append(name)
            continue
        groups["covered"].append(name)
    return groups


def report(show: str | None = None) -> dict:
    tests = tests_text()
    templates = name_templates(tests)
    totals = {"covered": 0, "in scope": 0}
    rows = []
    results = {}
    for area, (torch_obj, gradlab_path) in AREAS.items():
        groups = classify(area, torch_obj, gradlab_path, tests, templates)
        results[area] = groups
        in_scope = sum(len(v) for k, v in groups.items() if k != "out of scope")
        totals["covered"] += len(groups["covered"])
        totals["in scope"] += in_scope
        rows.append((area, len(groups["covered"]), in_scope, len(groups["no test"]), len(groups["parameters"]),
                     len(groups["missing"]), len(groups["out of scope"])))
    print(f"{'area':26} {'covered':>8} {'in scope':>9} {'%':>6} {'no test':>8} {'params':>7} {'missing':>8} "
          f"{'out of scope':>13}")
    for area, covered, in_scope, no_test, params, missing, oos in rows:
        pct = 100 * covered / in_scope if in_scope else 100.0
        print(f"{area:26} {covered:8d} {in_scope:9d} {pct:5.1f}% {no_test:8d} {params:7d} {missing:8d} {oos:13d}")
    pct = 100 * totals["covered"] / totals["in scope"]
    print(f"{'all':26} {totals['covered']:8d} {totals['in scope']:9d} {pct:5.1f}%")
    if show:
        for area, groups in results.items():
            entries = groups[show]
            if entries:
                print(f"\n## {area}: {show} ({len(entries)})")
                for entry in entries:
                    print("  ", entry if isinstance(entry, str) else f"{entry[0]}: {entry[1]}")
    return {"results": results, "covered": totals["covered"], "in_scope": totals["in scope"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", choices=["missing", "parameters", "no test", "out of scope", "covered"])
    report(parser.parse_args().list)


if __name__ == "__main__":
    main()
