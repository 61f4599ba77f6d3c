# lit configuration for Kiln's FileCheck tests (test/**/*.mlir).
import os
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "unit",
                   "Inputs", "same-text.py"]

# FileCheck, not, count and split-file from LLVM 19; kiln-opt from this build.
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# `kiln run MODEL` compiles into a cache; tests keep theirs in the build tree
# (and CPU feature overrides from the caller's shell do not leak in).
config.environment["KILN_CACHE_DIR"] = os.path.join(config.test_exec_root, "kiln-cache")
config.environment.pop("KILN_CPU_FEATURES", None)
llvm_config.add_tool_substitutions(
    ["kiln-opt", "kiln", "kiln-kernel-bench"], [config.kiln_tools_dir])

config.substitutions.append(("%kiln_src_root", config.kiln_src_root))
config.substitutions.append(("%kiln_obj_root", config.kiln_obj_root))

# Tests that run code compiled for AVX-512 say `REQUIRES: cpu-avx512`. The
# kernel's flags list only what the CPU has and the OS enables.
def cpu_flags():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()

if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= cpu_flags():
    config.available_features.add("cpu-avx512")

# CUDA targets compile with NVRTC, which Kiln links where the CUDA toolkit
# was found at configure time: tests of CUDA artifacts say `REQUIRES: nvrtc`
# and are reported unsupported (not run) without it.
if getattr(config, "kiln_have_nvrtc", "") == "1":
    config.available_features.add("nvrtc")
else:
    lit_config.note("NOT RUN: the CUDA toolkit (NVRTC) was not found when Kiln "
                    "was configured; tests of CUDA artifacts are unsupported")

# Model fixtures live outside the repository (docs: README, test/unit/TestData.h):
# $KILN_TEST_MODELS / $KILN_TEST_VOCAB, default ../shared beside the checkout.
# Tests that need them say `REQUIRES: shared-models`; in CI (CI=true) their
# absence is an error rather than a skip.
def shared_dir(variable, name):
    default = os.path.join(config.kiln_src_root, "..", "shared", name)
    return os.path.abspath(os.environ.get(variable) or default)

models = shared_dir("KILN_TEST_MODELS", "models")
vocab = shared_dir("KILN_TEST_VOCAB", "vocab")
if os.path.isfile(os.path.join(models, "stories260K.bin")):
    config.available_features.add("shared-models")
elif os.environ.get("CI") == "true":
    lit_config.fatal("CI needs the model fixtures at %s (set KILN_TEST_MODELS)" % models)
else:
    lit_config.note("model fixtures not found at %s: tests that need them are "
                    "unsupported; set KILN_TEST_MODELS" % models)
config.substitutions.append(("%models", models))
config.substitutions.append(("%vocab", vocab))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%same_text", "%s %s" % (
    sys.executable, os.path.join(config.test_source_root, "tools", "same-text.py"))))
