"""Checks that the exports of one module plan checkpoint exactly the plan's modules.

usage: module_checkpoints_check.py KIND PLAN.json LOOP.py HF.py DEEPSPEED.json
KIND is the --recompute the plan was made with: "all" must checkpoint every block, "optimal"
some but not all (the test's budget needs recompute and leaves some blocks unchecked).
"""
import ast
import json
import sys


def module_of(node):
    """The shallowest indexed module scope of a torch.onnx.export node name:
    "/blocks/blocks.0/attn/MatMul" -> "blocks.0" (checkpoint_modules.h)."""
    parts = node.split("/")[1:-1]
    paths = []
    previous = ""
    for segment in parts:
        if not paths:
            path = segment
        elif previous and segment.startswith(previous + "."):
            path = paths[-1][: len(paths[-1]) - len(previous)] + segment
        else:
            path = paths[-1] + "." + segment
        paths.append(path)
        previous = segment
    for path in paths:
        if path.rsplit(".", 1)[-1].isdigit():
            return path
    return paths[-1] if paths else None


def checkpointed_modules(loop_source):
    for statement in ast.parse(loop_source).body:
        if isinstance(statement, ast.Assign) and statement.targets[0].id == "CHECKPOINTED_MODULES":
            return [element.value for element in statement.value.elts]
    raise AssertionError("the loop has no CHECKPOINTED_MODULES")


def main(kind, plan_path, loop_path, hf_path, deepspeed_path):
    plan = json.load(open(plan_path))["plan"]
    assert plan["recompute_unit"] == "module", plan["recompute_unit"]
    modules = plan["recompute_modules"]
    total = plan["checkpointable_modules"]
    assert modules, "the test plans must checkpoint something"
    if kind == "all":
        assert len(modules) == total, (modules, total)
    else:
        assert 0 < len(modules) < total, (modules, total)

    loop = checkpointed_modules(open(loop_path).read())
    assert loop == modules, (loop, modules)
    outside = [n for n in plan["recompute"] if module_of(n) not in modules]
    assert not outside, outside

    hf = open(hf_path).read()
    assert "gradient_checkpointing=True," in hf
    if kind == "all":
        assert "exactly as planned" in hf and "cannot express" not in hf, hf
    else:
        assert "cannot express" in hf and f"checkpoints all {total} blocks" in hf, hf
        listed = [line[4:] for line in hf.splitlines() if line.startswith("#   ")]
        assert listed == modules, (listed, modules)

    notes = json.load(open(deepspeed_path))["_not_expressed"]
    recompute_note = next(note for note in notes if note.startswith("recompute:"))
    named = recompute_note.split(" nodes in ", 1)[1].split(";", 1)[0].split(", ")
    assert named == modules, (named, modules)
    print(f"{kind}: {len(modules)} of {total} modules, exports agree")


if __name__ == "__main__":
    main(*sys.argv[1:])
