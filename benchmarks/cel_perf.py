"""CEL device-selector benchmark: phalanx's own CEL against the Python CEL libraries on PyPI.

    python benchmarks/cel_perf.py            # all libraries that are installed; others are skipped with a note

For each library and each typical DRA selector (spec/dra.md §2.3) it prints the compile time and the evaluation
time per (expression, device), in microseconds (median of repeated runs), or why the selector cannot be expressed
with that library. The other libraries get the device as plain nested dicts (versions and quantities as strings),
which is all they can take; the Kubernetes selectors need phalanx's typed Quantity and Semver.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import cache
from typing import Any

from phalanx.api.cel import COST_LIMIT, CelError, Features, device_view
from phalanx.api.cel.selector import Selector, _compile
from phalanx.api.dra import DeviceAttribute, DeviceCapacity

SELECTORS = {
    "class": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "product": 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H")',
    "memory": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80G")) >= 0',
    "driver-major": 'device.attributes["gpu.nvidia.com"].driverVersion.major() >= 570',
    "bind": 'cel.bind(g, device.attributes["gpu.nvidia.com"], g.type == "gpu" && g.architecture == "Hopper")',
    "optional": 'device.attributes["gpu.nvidia.com"].?gpuModuleID.orValue(0) == 0',
}
ATTRIBUTES = {"type": "gpu", "productName": "NVIDIA H100 80GB HBM3", "architecture": "Hopper",
              "driverVersion": "580.95.5", "resource.kubernetes.io/pcieRoot": "pci0000:15"}  # fmt: skip
PLAIN_DEVICE: dict[str, Any] = {
    "driver": "gpu.nvidia.com",
    "attributes": {"gpu.nvidia.com": {k: v for k, v in ATTRIBUTES.items() if "/" not in k}},
    "capacity": {"gpu.nvidia.com": {"memory": "81559Mi"}},
    "allowMultipleAllocations": False,
}
Runner = Callable[[str], Callable[[], object]]  # compile an expression, return a function evaluating it once


def _median_us(function: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            function()
        samples.append((time.perf_counter() - start) / repeat * 1e6)
    return statistics.median(samples)


def phalanx_runner(expression: str) -> Callable[[], object]:
    attributes = {k: DeviceAttribute(version=v) if k == "driverVersion" else DeviceAttribute(string=v)
                  for k, v in ATTRIBUTES.items()}  # fmt: skip
    device = device_view("gpu.nvidia.com", attributes, {"memory": DeviceCapacity(value="81559Mi")}, False)
    selector = Selector(expression, _compile(expression, Features(), stored=True))  # uncached: compile is measured
    return lambda: selector.evaluate(device, COST_LIMIT)


def rust_runner(expression: str) -> Callable[[], object]:
    import cel  # common-expression-language

    program = cel.compile(expression)
    context = cel.Context({"device": PLAIN_DEVICE})
    return lambda: program.execute(context)


def celpy_runner(expression: str) -> Callable[[], object]:
    import celpy  # cel-python

    environment = celpy.Environment()
    program = environment.program(environment.compile(expression))
    activation = {"device": celpy.json_to_cel(PLAIN_DEVICE)}
    return lambda: program.evaluate(activation)


@cache
def _cpp_environment() -> Any:
    # Built once, like the other libraries' environments, so that compile time is the expression's alone.
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

    extensions = [ext_optional.ExtOptional(), ext_bindings.ExtBindings(), ext_strings.ExtStrings()]
    return cel.NewEnv(variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)}, extensions=extensions)


def cpp_runner(expression: str) -> Callable[[], object]:
    compiled = _cpp_environment().compile(expression)

    def evaluate() -> object:
        value = compiled.eval(data={"device": PLAIN_DEVICE}).plain_value()
        if not isinstance(value, bool):
            raise RuntimeError(str(value))  # cel-cpp returns errors as values
        return value

    return evaluate


LIBRARIES: dict[str, tuple[str, Runner]] = {
    "phalanx.api.cel": ("phalanx", phalanx_runner),
    "common-expression-language": ("cel", rust_runner),
    "cel-python": ("celpy", celpy_runner),
    "cel-expr-python": ("cel_expr_python", cpp_runner),
}


def measure(runner: Runner, expression: str) -> tuple[str, str]:
    try:
        compile_us = _median_us(lambda: runner(expression), 20)
        evaluate = runner(expression)
        evaluate()
    except (CelError, Exception) as error:
        reason = str(error).splitlines()[0][:48]
        return "-", f"unsupported: {reason}"
    return f"{compile_us:8.1f}", f"{_median_us(evaluate, 200):8.2f}"


def main() -> None:
    print(f"{'library':28} {'selector':13} {'compile µs':>10} {'eval µs':>9}")
    for library, (module, runner) in LIBRARIES.items():
        try:
            __import__(module)
        except ImportError:
            print(f"{library:28} (not installed: pip install {library} to compare)")
            continue
        for name, expression in SELECTORS.items():
            compile_us, eval_us = measure(runner, expression)
            print(f"{library:28} {name:13} {compile_us:>10} {eval_us:>9}")


if __name__ == "__main__":
    main()
