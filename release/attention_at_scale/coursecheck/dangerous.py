# Generated from the course's judge by the release build: do not edit.
"""The names in a student's code that reach past the answer: one vocabulary, each name once.

Read by the integrity scan (``integrity.scanner``, which flags a notebook for a grader) and by
the judge's rule prover (``judge.tampering`` and ``judge.resolve``, which fail a rule); shipped
with the students' prover (``coursecheck``). Each reader judges by the sets its rules name,
built here from the pieces. Plain sets of strings and one pattern: it imports nothing of the
package.
"""

import re

# Builtins that run code given as data.
DYNAMIC_CODE = {"exec", "eval", "compile"}
# Builtins that reach the interpreter's own state: namespaces, imports, the debugger, classes
# built without the class statement.
INTERPRETER_BUILTINS = {"__import__", "globals", "locals", "vars", "breakpoint", "__build_class__"}
# The judge: every builtin that runs or reaches code it cannot read.
DYNAMIC_BUILTINS = DYNAMIC_CODE | INTERPRETER_BUILTINS

# Modules that reach the interpreter's own state: frames, imports, memory, exit hooks.
INTERPRETER_MODULES = {"builtins", "sys", "importlib", "ctypes", "gc", "inspect", "atexit"}
# Modules that reach the machine around the interpreter: files, processes, source lines.
SYSTEM_MODULES = {"os", "subprocess", "shutil", "linecache"}
# Modules that run code the cell does not show: from bytes or text, in other threads or
# processes, on signals or collection, under a debugger; and the grader's own package.
CODE_RUNNING_MODULES = {
    "types",
    "code",
    "codeop",
    "runpy",
    "pickle",
    "marshal",
    "dill",
    "cloudpickle",
    "signal",
    "threading",
    "_thread",
    "multiprocessing",
    "concurrent",
    "asyncio",
    "weakref",
    "trace",
    "pdb",
    "bdb",
    "IPython",
    "ipykernel",
    "coursecheck",
}
# The judge: modules whose import makes every rule unverifiable.
DYNAMIC_MODULES = INTERPRETER_MODULES | CODE_RUNNING_MODULES

# Attributes of frames, tracebacks, generators and coroutines: the caller's namespaces.
FRAME_ATTRIBUTES = {
    "f_globals",
    "f_locals",
    "f_back",
    "f_builtins",
    "f_code",
    "f_trace",
    "tb_frame",
    "gi_frame",
    "cr_frame",
}
# Dunder attributes a student's code may name: every other reaches interpreter internals.
PLAIN_DUNDERS = {"__init__", "__name__", "__doc__", "__qualname__"}
# The internals the integrity scan names (the judge refuses every dunder but PLAIN_DUNDERS).
INTERNAL_ATTRIBUTES = {
    "_getframe",
    "__globals__",
    "__code__",
    "__closure__",
    "__subclasses__",
    "__bases__",
    "__mro__",
    "__loader__",
    "__spec__",
    "__import__",
    "__builtins__",
}

# Methods through which PyTorch hands a class every operation on its tensors.
TORCH_HOOKS = {"__torch_function__", "__torch_dispatch__"}
# Methods through which NumPy hands a class every operation on its arrays.
NUMPY_HOOKS = {"__array_ufunc__", "__array_function__"}
# Methods Python calls for a comparison, a truth test or an isinstance check.
TRUTH_HOOKS = {"__eq__", "__ne__", "__bool__", "__instancecheck__", "__subclasscheck__"}
# Calls that register a hook or a tracer: code run on events the cell does not show.
HOOK = re.compile(r"(^|_)(register_.*hook.*|register_module_.*|settrace|setprofile|addaudithook)$")

# Magics whose code runs in the notebook's namespace: read like the cell's own statements.
CODE_MAGICS = {"time", "capture"}
# Magics that run no code of the notebook and read nothing of its namespace.
QUIET_MAGICS = {"matplotlib", "timeit"}
# Magics that only show the namespace or IPython's settings (the integrity scan flags them).
NAMESPACE_MAGICS = {"who", "whos", "pinfo", "precision", "config", "lsmagic"}
# The judge: magics that change nothing an answer computes.
INERT_MAGICS = QUIET_MAGICS | NAMESPACE_MAGICS
