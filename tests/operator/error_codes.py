"""Every error code the gateway's source can answer with, read from the source (`ast`).

A code is a string in a *code position*: the second argument of `ApiError(status, code,
...)`; the `code` argument of any function or class of `gateway/` that takes a string
`code` (`not_found(code, ...)`, `UnsafeUrl(..., code=...)`, the `_Shape` table of provider
errors); a `"code"` beside a `"message"` in a dict literal (a stream's error event); a
string default of a `code` parameter. An expression there is followed to its strings:
literals, both sides of a conditional, the values of a table it indexes (`CODES[kind]`,
`table.get(key, default)`), a local name's assignments (tuple unpacking included). A
parameter named `code`, an object's `.code` and the `["code"]` of an error body handed in
as a parameter (`error["code"]`: a dialect relaying the core's `error` event) are covered
where they are passed or made.

Anything else in a code position (an f-string, a call) is reported as unresolved, so a new
way of producing codes fails the test until this reader learns it, rather than slipping by.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import attrs

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"
# Kernels below `gateway/` whose exceptions carry the codes the gateway answers with: the
# address guard's `UnsafeUrl` (webhook URLs).
KERNELS = (GATEWAY.parent / "providers" / "upstream" / "guard.py",)
ENVELOPE = "gateway.platform.errors.ApiError"
KEYWORD = -1  # the position of a `code` that is a keyword-only parameter

Function = ast.FunctionDef | ast.AsyncFunctionDef


@attrs.frozen
class Found:
    codes: dict[str, str]  # code -> where it is first produced (path:line)
    statuses: dict[str, set[int]]  # code -> the literal statuses it is raised with
    unresolved: list[str]


@attrs.define
class _Module:
    name: str
    path: Path
    tree: ast.Module
    aliases: dict[str, str]  # local name -> qualified name
    parents: dict[ast.AST, ast.AST]

    def where(self, node: ast.expr) -> str:
        return f"{self.path.relative_to(GATEWAY.parent)}:{node.lineno}"

    def function_of(self, node: ast.AST) -> Function | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                return node
        return None


def error_codes(root: Path = GATEWAY) -> Found:
    kernels = KERNELS if root == GATEWAY else ()
    modules = [_load(path, root) for path in [*sorted(root.rglob("*.py")), *kernels]]
    takers = _code_takers(modules)
    codes: dict[str, str] = {}
    statuses: dict[str, set[int]] = {}
    unresolved: list[str] = []
    for module, expr, status in _code_positions(modules, takers):
        for code in _Resolver(module, unresolved).strings(expr):
            codes.setdefault(code, module.where(expr))
            if status is not None:
                statuses.setdefault(code, set()).add(status)
    return Found(codes, statuses, unresolved)


def _load(path: Path, root: Path) -> _Module:
    relative = path.relative_to(root.parent).with_suffix("")
    name = ".".join(part for part in relative.parts if part != "__init__")
    tree = ast.parse(path.read_text())
    aliases: dict[str, str] = {}
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            aliases[node.name] = f"{name}.{node.name}"
    return _Module(name, path, tree, aliases, parents)


def _code_takers(modules: list[_Module]) -> dict[str, int]:
    """Qualified name -> the position of its string `code` parameter (`KEYWORD`: keyword
    only)."""
    takers: dict[str, int] = {ENVELOPE: 1}
    for module in modules:
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                position = _string_code_position(node, skip_self=False)
                if position is not None:
                    takers[f"{module.name}.{node.name}"] = position
            elif isinstance(node, ast.ClassDef):
                position = _class_code_position(node)
                if position is not None:
                    takers[f"{module.name}.{node.name}"] = position
    for module in modules:  # a subclass without its own `__init__` takes its base's
        for node in module.tree.body:
            if isinstance(node, ast.ClassDef) and not _has_init(node):
                base = _base_taker(module, node, modules, takers)
                if base is not None:
                    takers[f"{module.name}.{node.name}"] = takers[base]
    return takers


def _has_init(cls: ast.ClassDef) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in cls.body)


def _base_taker(
    module: _Module, cls: ast.ClassDef, modules: list[_Module], takers: dict[str, int]
) -> str | None:
    for base in cls.bases:
        qualified = _qualified(module, base, modules)
        if qualified in takers:
            return qualified
    return None


def _string_code_position(func: Function, *, skip_self: bool) -> int | None:
    """Where `func` takes a string `code`; None when it takes none."""
    positional = func.args.posonlyargs + func.args.args
    if skip_self:
        positional = positional[1:]
    for index, arg in enumerate(positional):
        if arg.arg == "code" and _is_string(arg.annotation):
            return index
    if any(a.arg == "code" and _is_string(a.annotation) for a in func.args.kwonlyargs):
        return KEYWORD
    return None


def _class_code_position(cls: ast.ClassDef) -> int | None:
    """An exception's `__init__(..., code: str)`, or an attrs class's `code: str` field."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            return _string_code_position(node, skip_self=True)
    fields = [node for node in cls.body if isinstance(node, ast.AnnAssign)]
    for index, field in enumerate(fields):
        if isinstance(field.target, ast.Name) and field.target.id == "code":
            return index if _is_string(field.annotation) else None
    return None


def _is_string(annotation: ast.expr | None) -> bool:
    return annotation is not None and "str" in ast.unparse(annotation).split(" | ")


def _code_positions(
    modules: list[_Module], takers: dict[str, int]
) -> Iterator[tuple[_Module, ast.expr, int | None]]:
    """(module, expression in a code position, the HTTP status beside it when the call
    takes `(status, code, ...)` with a literal status)."""
    for module in modules:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call):
                qualified = _qualified(module, node.func, modules) or _super_init(
                    module, node, modules, takers
                )
                if qualified in takers:
                    status = _literal_status(node) if takers[qualified] == 1 else None
                    for expr in _code_arguments(node, takers[qualified]):
                        yield module, expr, status
            elif isinstance(node, ast.Dict) and _is_error_object(module, node):
                keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
                yield module, node.values[keys.index("code")], None
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from ((module, d, None) for d in _code_defaults(node))


def _literal_status(call: ast.Call) -> int | None:
    first = call.args[0] if call.args else None
    if isinstance(first, ast.Constant) and isinstance(first.value, int):
        return first.value
    return None


def _super_init(
    module: _Module, call: ast.Call, modules: list[_Module], takers: dict[str, int]
) -> str | None:
    """The base taking a `code` when `call` is `super().__init__(...)` in a subclass of one
    (`RateLimitExceeded(ApiError)`)."""
    match call.func:
        case ast.Attribute(attr="__init__", value=ast.Call(func=ast.Name(id="super"))):
            pass
        case _:
            return None
    node: ast.AST = call
    while node in module.parents and not isinstance(node, ast.ClassDef):
        node = module.parents[node]
    return _base_taker(module, node, modules, takers) if isinstance(node, ast.ClassDef) else None


def _is_error_object(module: _Module, node: ast.Dict) -> bool:
    """`{"code": ..., "message": ...}` as an event's `error` (the value of an `"error"` key,
    or assigned to `error`); a vendor's own error object, quoted under another name
    (`provider_error`), carries the vendor's code, not one of ours."""
    keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
    if not {"code", "message"} <= keys:
        return False
    parent = module.parents.get(node)
    if isinstance(parent, ast.Dict):
        index = next(i for i, value in enumerate(parent.values) if value is node)
        key = parent.keys[index]
        return isinstance(key, ast.Constant) and key.value == "error"
    if isinstance(parent, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "error" for t in parent.targets)
    return False


def _code_arguments(call: ast.Call, position: int) -> Iterator[ast.expr]:
    yield from (k.value for k in call.keywords if k.arg == "code")
    if 0 <= position < len(call.args):
        yield call.args[position]


def _code_defaults(func: Function) -> Iterator[ast.expr]:
    positional = func.args.posonlyargs + func.args.args
    with_default = positional[len(positional) - len(func.args.defaults) :]
    paired = list(zip(with_default, func.args.defaults, strict=True))
    keywords = zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True)
    paired += [(arg, default) for arg, default in keywords if default is not None]
    yield from (default for arg, default in paired if arg.arg == "code")


def _qualified(module: _Module, func: ast.expr, modules: list[_Module]) -> str | None:
    """The callee's qualified name, following re-exports (`from a import b` of a name `a`
    itself imported)."""
    if isinstance(func, ast.Name):
        name = module.aliases.get(func.id)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        base = module.aliases.get(func.value.id)
        name = f"{base}.{func.attr}" if base else None
    else:
        return None
    by_name = {m.name: m for m in modules}
    for _ in range(5):
        owner, _, attr = (name or "").rpartition(".")
        target = by_name.get(owner)
        if target is None or target.aliases.get(attr) in (None, name):
            return name
        name = target.aliases[attr]
    return name


@attrs.define
class _Resolver:
    module: _Module
    unresolved: list[str]

    def strings(self, expr: ast.expr, element: int | None = None) -> set[str]:
        """The strings `expr` can be (its tuple's `element` when given)."""
        match expr:
            case ast.Constant(value=str() as value):
                return {value}
            case ast.Constant():
                return set()  # a number: JSON-RPC and exit codes are not envelope codes
            case ast.Tuple(elts=elts) if element is not None:
                return self.strings(elts[element])
            case ast.IfExp(body=body, orelse=orelse):
                return self.strings(body, element) | self.strings(orelse, element)
            case ast.Attribute(attr="code"):
                return set()  # covered where the object carrying it is made
            case ast.Name(id=name) if self._is_parameter(expr, name):
                return set()  # covered where the function is called
            case ast.Subscript(value=ast.Name(id=name), slice=ast.Constant(value="code")) if (
                self._is_parameter(expr, name)
            ):
                return set()  # an error body handed in: covered where it is made
            case ast.Name(id=name):
                return self._assigned(expr, name, element)
            case ast.Subscript(value=ast.Name(id=table)):
                return self._table(expr, table, element)
            case ast.Call(func=ast.Attribute(value=ast.Name(id=table), attr="get"), args=args):
                default = self.strings(args[1], element) if len(args) > 1 else set()
                return self._table(expr, table, element) | default
        self.unresolved.append(f"{self.module.where(expr)}: {ast.unparse(expr)}")
        return set()

    def _is_parameter(self, node: ast.expr, name: str) -> bool:
        func = self.module.function_of(node)
        if func is None:
            return False
        every = func.args.posonlyargs + func.args.args + func.args.kwonlyargs
        return name in {arg.arg for arg in every}

    def _scopes(self, node: ast.expr) -> list[ast.AST]:
        func = self.module.function_of(node)
        return [func, self.module.tree] if func is not None else [self.module.tree]

    def _assigned(self, node: ast.expr, name: str, element: int | None) -> set[str]:
        for scope in self._scopes(node):
            values = list(_assignments(scope, name, element))
            if values:
                return set().union(*(self.strings(v, e) for v, e in values))
        self.unresolved.append(f"{self.module.where(node)}: {name}")
        return set()

    def _table(self, node: ast.expr, table: str, element: int | None) -> set[str]:
        """The values of dict `table` (its literal and its `table[key] = value` items)."""
        for scope in self._scopes(node):
            values: list[ast.expr] = []
            for found in ast.walk(scope):
                if isinstance(found, ast.Assign | ast.AnnAssign) and found.value is not None:
                    targets = found.targets if isinstance(found, ast.Assign) else [found.target]
                    for target in targets:
                        if isinstance(target, ast.Name) and target.id == table:
                            values.extend(_dict_values(found.value))
                        elif _is_item_of(target, table):
                            values.append(found.value)
            if values:
                return set().union(*(self.strings(v, element) for v in values))
        self.unresolved.append(f"{self.module.where(node)}: table {table}")
        return set()


def _assignments(
    scope: ast.AST, name: str, element: int | None
) -> Iterator[tuple[ast.expr, int | None]]:
    """What `name` is assigned in `scope`: (value, element of the value), tuple targets
    giving the element their position."""
    for node in ast.walk(scope):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == name:
                yield node.value, element
            elif isinstance(target, ast.Tuple):
                for index, part in enumerate(target.elts):
                    if isinstance(part, ast.Name) and part.id == name:
                        yield node.value, index


def _dict_values(value: ast.expr) -> list[ast.expr]:
    return [v for v in value.values] if isinstance(value, ast.Dict) else [value]


def _is_item_of(target: ast.expr, table: str) -> bool:
    return (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == table
    )
