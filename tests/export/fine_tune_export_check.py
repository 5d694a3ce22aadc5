#!/usr/bin/env python3
"""Checks that an exported Python script carries a fine-tuning plan, by reading its syntax tree
(Debian's python3 only: CI has neither torch nor peft, so nothing is imported or run).

Usage: fine_tune_export_check.py SCRIPT.py EXPECT_JSON
EXPECT_JSON keys (each optional):
  lora: {"r": 16, "lora_alpha": 16, "target_modules": [...]}  a LoraConfig(...) with these values
  quantization: "nf4" | "int8"     a BitsAndBytesConfig(...) loading the base so
  optimizer: "bitsandbytes.optim.PagedAdamW8bit"   a call of that constructor
  training_arguments: {"optim": ..., "weight_decay": ...}  keywords of TrainingArguments(...)
  calls: ["apply_fine_tuning"]     functions the script calls
  defines: ["apply_fine_tuning"]   functions the script defines (for the user's code to call)
Also fails on a name the script reads but never defines, imports or receives (the NameError of a
missing `import bitsandbytes`). Exit 0 when every check holds; else one line per failure.
"""
import ast
import builtins
import json
import sys


def dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return head + "." + node.attr if head else None
    return None


def keywords(call):
    out = {}
    for k in call.keywords:
        try:
            out[k.arg] = ast.literal_eval(k.value)
        except ValueError:
            out[k.arg] = dotted(k.value)
    return out


def defined_names(tree):
    names = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def main():
    source = open(sys.argv[1], encoding="utf-8").read()
    expect = json.loads(sys.argv[2])
    tree = ast.parse(source, sys.argv[1])
    failures = []
    defined = defined_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in defined:
            failures.append(f"line {node.lineno}: '{node.id}' is used but never defined or imported")
    calls = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = dotted(node.func)
            if name:
                calls.setdefault(name, []).append(node)

    def one_call(name):
        found = calls.get(name, [])
        if len(found) != 1:
            failures.append(f"expected one call of {name}, found {len(found)}")
            return None
        return keywords(found[0])

    if "lora" in expect:
        got = one_call("LoraConfig")
        if got is not None:
            for key, value in expect["lora"].items():
                if got.get(key) != value:
                    failures.append(f"LoraConfig {key}={got.get(key)!r}, expected {value!r}")
    if "quantization" in expect:
        got = one_call("BitsAndBytesConfig")
        if got is not None:
            if expect["quantization"] == "nf4":
                if got.get("load_in_4bit") is not True or got.get("bnb_4bit_quant_type") != "nf4":
                    failures.append(f"BitsAndBytesConfig {got} does not load an nf4 base")
            elif got.get("load_in_8bit") is not True:
                failures.append(f"BitsAndBytesConfig {got} does not load an int8 base")
    elif "BitsAndBytesConfig" in calls:
        failures.append("BitsAndBytesConfig written for a plan without a quantised base")
    if "optimizer" in expect and expect["optimizer"] not in calls:
        failures.append(f"no call of {expect['optimizer']}")
    if "training_arguments" in expect:
        got = one_call("TrainingArguments")
        if got is not None:
            for key, value in expect["training_arguments"].items():
                if got.get(key) != value:
                    failures.append(f"TrainingArguments {key}={got.get(key)!r}, expected {value!r}")
    functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for name in expect.get("defines", []):
        if name not in functions:
            failures.append(f"{name} is never defined")
    for name in expect.get("calls", []):
        if name not in calls:
            failures.append(f"{name} is never called")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
