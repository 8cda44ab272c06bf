"""The source tree's shape: package size, module and function length, function width (a class
kept by identity, `@dataclass(eq=False)`, counting its fields as its constructor's), no
`**kwargs: Any` in a constructor (a missing object hidden), no import cycle between modules or
between packages; each package's `__init__` names every module and subpackage it holds (as
httpx's `tests/test_exported_members.py` holds `__all__` against the module), and
docs/internals.md names every package and nothing that is gone. There is no list of accepted
findings: a limit is met by design (find the second thing a module owns and give it a home),
never by an exception."""

from __future__ import annotations

import ast
import gc
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULES = 14  # in one package, its subpackages apart
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50
MAX_PARAMETERS = 12  # of any function, `self` apart
INTERNALS = ROOT / "docs" / "internals.md"


@dataclass(frozen=True)
class Tree:
    texts: dict[str, str]  # module (a package by its `__init__`) → its source
    packages: frozenset[str]
    top: str  # the top package, whose own modules (models, errors …) stand for themselves

    def package_of(self, name: str) -> str:
        return name if name in self.packages else name.rpartition(".")[0]


def read_tree(package: str = "bot") -> Tree:
    texts, packages = {}, set()
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
            packages.add(".".join(parts))
        texts[".".join(parts)] = path.read_text(encoding="utf-8")
    return Tree(texts, frozenset(packages), package)


def imports(tree: Tree, name: str, parsed: ast.Module) -> Iterator[str]:
    """The tree's modules `name` imports, wherever the import is (type checking too)."""
    base = tree.package_of(name).split(".")
    for node in ast.walk(parsed):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            head = ".".join(base[: len(base) - node.level + 1]) if node.level else ""
            module = ".".join(part for part in (head, node.module or "") if part)
            names = [f"{module}.{alias.name}" for alias in node.names]
            targets = [t if t in tree.texts else module for t in names]  # a submodule, or names
        else:
            continue
        yield from (t for t in targets if t in tree.texts and t != name)


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The graph's strongly connected parts of more than one node, each sorted."""
    after: dict[str, set[str]] = {}
    for a, b in edges:
        after.setdefault(a, set()).add(b)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in after.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {node: reach(node) for node in after}
    parts = {frozenset(n for n in reached[a] if a in reached.get(n, ())) for a in after}
    return sorted(sorted(part) for part in parts if len(part) > 1)


def parsed_modules(tree: Tree) -> list[tuple[str, str, ast.Module]]:
    """Each module's text parsed, with the collector held off: a finalizer run mid-parse
    (another test's leaked socket) that prints a traceback parses again, and CPython 3.11 then
    fails the outer parse ("AST constructor recursion depth mismatch"). pytest still reports
    the leak."""
    gc.collect()
    gc.disable()
    try:
        return [(name, text, ast.parse(text)) for name, text in tree.texts.items()]
    finally:
        gc.enable()


def findings(tree: Tree) -> Iterator[str]:
    sizes: dict[str, int] = {}
    module_edges: set[tuple[str, str]] = set()
    for name, text, parsed in parsed_modules(tree):
        if name not in tree.packages:
            sizes[tree.package_of(name)] = sizes.get(tree.package_of(name), 0) + 1
            if tree.package_of(name) not in tree.packages:  # no `__init__` to name it
                yield f"module {name}: its folder is not a package"
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            yield f"module {name}: {lines} lines"
        yield from _functions(name, parsed)
        yield from _services(name, parsed)
        module_edges |= {(name, target) for target in imports(tree, name, parsed)}
    yield from (f"package {p}: {n} modules" for p, n in sizes.items() if n > MAX_MODULES)
    for part in cycles(module_edges):
        yield "module cycle: " + " ⇄ ".join(part)
    for part in cycles(_package_edges(tree, module_edges)):
        yield "package cycle: " + " ⇄ ".join(part)


def _functions(name: str, parsed: ast.Module) -> Iterator[str]:
    for node in ast.walk(parsed):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        if length > MAX_FUNCTION_LINES:
            yield f"function {name}.{node.name}: {length} lines"
        args = node.args
        listed = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        width = len(listed) - (bool(listed) and listed[0].arg in ("self", "cls"))
        width += (args.vararg is not None) + (args.kwarg is not None)
        if width > MAX_PARAMETERS:
            what = "constructor in " if node.name == "__init__" else f"function {node.name} in "
            yield f"{what}{name} (line {node.lineno}): {width} parameters"
        kwarg = args.kwarg
        if node.name == "__init__" and kwarg is not None and _is_any(kwarg.annotation):
            yield f"constructor in {name} (line {node.lineno}): **{kwarg.arg}: Any"


def _services(name: str, parsed: ast.Module) -> Iterator[str]:
    """A class that keeps its collaborators as dataclass fields (`eq=False`: compared by
    identity, as an object with an `__init__` is) has a constructor as wide as its fields."""
    for node in ast.walk(parsed):
        if not isinstance(node, ast.ClassDef) or not any(
            ast.unparse(d).startswith("dataclass(") and "eq=False" in ast.unparse(d)
            for d in node.decorator_list
        ):
            continue
        width = sum(
            isinstance(s, ast.AnnAssign)
            and ast.unparse(s.annotation) not in ("KW_ONLY", "dataclasses.KW_ONLY")
            and not ast.unparse(s.annotation).startswith(("ClassVar", "typing.ClassVar"))
            and not (s.value is not None and "init=False" in ast.unparse(s.value))
            for s in node.body
        )
        if width > MAX_PARAMETERS:
            yield f"constructor in {name} (line {node.lineno}): {width} parameters"


def _is_any(annotation: ast.expr | None) -> bool:
    return annotation is not None and ast.unparse(annotation) in ("Any", "typing.Any")


def unnamed(tree: Tree) -> Iterator[str]:
    """Each module and subpackage a package holds that its `__init__` docstring does not name
    (as `name.py`, or `name/` for a subpackage)."""
    for package in sorted(tree.packages):
        doc = ast.get_docstring(ast.parse(tree.texts[package])) or ""
        for held in sorted(tree.texts):
            if held == package or held.rpartition(".")[0] != package:
                continue
            leaf = held.rpartition(".")[2]
            shown = f"{leaf}/" if held in tree.packages else f"{leaf}.py"
            if not re.search(rf"(?<![\w.]){re.escape(shown)}", doc):
                yield f"package {package}: its __init__ does not name {shown}"


def unlisted(tree: Tree, internals: str) -> Iterator[str]:
    """What docs/internals.md's table of the code's layout misses (a package of the top one,
    or a subpackage on its row), and each `bot/…` path it names that is not in the tree."""
    rows = {  # a package → its row, by the first cell naming it
        named: line
        for line in internals.splitlines()
        if line.startswith("| ")
        for named in re.findall(r"`(bot/\w+/)`", line.split("|")[1])
    }
    for package in sorted(tree.packages - {tree.top}):
        parts = package.split(".")
        top = f"{parts[0]}/{parts[1]}/"
        if top not in rows:
            yield f"docs/internals.md: no row for {top}"
        elif len(parts) > 2 and f"{parts[-1]}/" not in rows[top]:
            yield f"docs/internals.md: {top}'s row does not name {parts[-1]}/"
    for path in sorted(set(re.findall(r"`(bot/[\w/.]*)`", internals))):
        dotted = path.removesuffix("/").removesuffix(".py").replace("/", ".")
        if dotted not in tree.texts and not (ROOT / path).exists():
            yield f"docs/internals.md: {path} is not in the tree"


def _package_edges(tree: Tree, module_edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Between packages (the top package's own modules standing for themselves); an import
    between a package and one of its own ancestors is layering, not a cycle."""

    def node(name: str) -> str:
        package = tree.package_of(name)
        return name if package == tree.top else package

    edges = {(node(a), node(b)) for a, b in module_edges}
    return {
        (a, b)
        for a, b in edges
        if a != b and not (a + ".").startswith(b + ".") and not (b + ".").startswith(a + ".")
    }


def test_the_source_tree_keeps_its_shape() -> None:
    assert sorted(set(findings(read_tree()))) == []


def test_each_package_names_what_it_holds() -> None:
    assert list(unnamed(read_tree())) == []


def test_the_internals_page_matches_the_tree() -> None:
    assert list(unlisted(read_tree(), INTERNALS.read_text(encoding="utf-8"))) == []


def test_the_guard_sees_each_kind_of_finding() -> None:
    probe = Tree(
        texts={
            "p": "",
            "p.models": "",
            "p.a": "",
            "p.a.one": "from p.b.two import X\n",
            "p.b": "",
            "p.b.two": "from p.a import one\nX = 1\n",
            "p.b.three": "from . import four\n",
            "p.b.four": "from p.b import three\n",
            "p.c": "",
            "p.c.wide": "class A:\n    def __init__(self" + ", q" * 13 + "): ...\n",
            "p.c.long": "def f():\n" + "    x = 1\n" * 50 + "\n" * 351,
            **{f"p.c.m{n}": "" for n in range(13)},
        },
        packages=frozenset({"p", "p.a", "p.b", "p.c"}),
        top="p",
    )

    assert set(findings(probe)) == {
        "module cycle: p.a.one ⇄ p.b.two",
        "module cycle: p.b.four ⇄ p.b.three",
        "package cycle: p.a ⇄ p.b",
        "constructor in p.c.wide (line 2): 13 parameters",
        "function p.c.long.f: 51 lines",
        "module p.c.long: 402 lines",
        "package p.c: 15 modules",
    }


def test_the_guard_counts_the_fields_of_a_class_kept_by_identity() -> None:
    fields = "".join(f"    q{n}: int\n" for n in range(13))
    probe = Tree(
        texts={
            "p": "",
            "p.kept": "@dataclass(eq=False)\nclass A:\n    _: KW_ONLY\n" + fields,
            "p.value": "@dataclass(frozen=True)\nclass V:\n" + fields,
        },
        packages=frozenset({"p"}),
        top="p",
    )

    assert set(findings(probe)) == {"constructor in p.kept (line 2): 13 parameters"}


def test_the_guard_sees_what_was_used_to_dodge_it() -> None:
    probe = Tree(
        texts={
            "p": '"""p\n\nnamed.py  one\nsub/  two"""\n',
            "p.named": "def f(" + ", ".join(f"q{n}" for n in range(13)) + "): ...\n",
            "p.quiet": "class A:\n    def __init__(self, **options: Any) -> None: ...\n",
            "p.sub": "",
            "p.sub.deep": "",
        },
        packages=frozenset({"p", "p.sub"}),
        top="p",
    )

    assert set(findings(probe)) == {
        "function f in p.named (line 1): 13 parameters",
        "constructor in p.quiet (line 2): **options: Any",
    }
    assert list(unnamed(probe)) == [
        "package p: its __init__ does not name quiet.py",
        "package p.sub: its __init__ does not name deep.py",
    ]
    packages = frozenset({"bot", "bot.one", "bot.one.two", "bot.three"})
    tree = Tree(dict.fromkeys(packages, ""), packages, "bot")
    page = "| `bot/gone/` | x |\n| `bot/one/` | y |\n"
    assert list(unlisted(tree, page)) == [
        "docs/internals.md: bot/one/'s row does not name two/",
        "docs/internals.md: no row for bot/three/",
        "docs/internals.md: bot/gone/ is not in the tree",
    ]


def test_a_folder_of_modules_without_an_init_is_a_finding() -> None:
    """A module no package holds would escape the naming rule and the package size."""
    probe = Tree({"p": '"""p"""', "p.loose.stray": ""}, frozenset({"p"}), "p")
    assert list(findings(probe)) == ["module p.loose.stray: its folder is not a package"]
