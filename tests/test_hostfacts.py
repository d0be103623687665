"""Host facts and the GPU environment variants (thinkprobe.generate.hostfacts): the decision on recorded facts
of real node types (what `nvidia-smi` and glibc report), the schema's variant enum, and the GPU guard's message
for 0 CUDA devices telling a driver problem from a partition problem."""

from __future__ import annotations

import pytest
import yaml

from thinkprobe.generate import hostfacts as hf
from thinkprobe.generate.gpu_guard import gpu_problem
from tests.workflow_helpers import REPO

pytestmark = pytest.mark.fast

A100 = hf.Gpu("NVIDIA A100-SXM4-80GB", 81920, "8.0")
V100 = hf.Gpu("Tesla V100-SXM2-32GB", 32768, "7.0")
# recorded facts: (what the node reports) -> the variants that run there
NODES = {
    "rocky9, driver 580": (hf.HostFacts("g1", "2.34", "580.82.07", [A100] * 4), ["cuda13", "cuda12"]),
    "rocky9, driver 550": (hf.HostFacts("g2", "2.34", "550.54.15", [A100]), ["cuda12"]),
    "ubuntu22, V100, driver 580": (hf.HostFacts("g3", "2.35", "580.65.06", [V100]), ["cuda12"]),
    "rocky8, driver 580": (hf.HostFacts("g4", "2.28", "580.82.07", [A100]), []),
    "driver 470": (hf.HostFacts("g5", "2.34", "470.239.06", [V100]), []),
    "cpu node": (hf.HostFacts("c1", "2.34", None), []),
}


@pytest.mark.parametrize("node", NODES)
def test_the_variants_that_run_on_recorded_nodes(node):
    facts, expected = NODES[node]
    assert hf.suitable_variants(facts) == expected


def test_each_failure_names_the_host_fact_and_the_fix():
    err = hf.variant_problems(NODES["rocky9, driver 550"][0], "cuda13")[0]
    assert err == ["node g2: NVIDIA driver 550.54.15 is older than 580.65.06, the oldest that runs CUDA 13.0 "
                   "(envs/gpu.yaml, environments.gpu_variant = cuda13): set environments.gpu_variant: cuda12"]
    assert any("glibc 2.28 is older than 2.31" in e for e in hf.variant_problems(NODES["rocky8, driver 580"][0],
                                                                                   "cuda13")[0])
    assert any("compute capability 7.0" in e and "cuda12" in e
               for e in hf.variant_problems(NODES["ubuntu22, V100, driver 580"][0], "cuda13")[0])
    assert "no NVIDIA driver" in hf.variant_problems(NODES["cpu node"][0], "cuda12")[0][0]
    # minor-version compatibility: runs, with a warning
    errors, warnings = hf.variant_problems(NODES["rocky9, driver 550"][0], "cuda12")
    assert not errors and "minor-version compatibility" in warnings[0]
    # GPU memory below the plan's resources.gpu_mem_gb
    small = hf.HostFacts("g6", "2.34", "580.82.07", [hf.Gpu("NVIDIA A100-PCIE-40GB", 40960, "8.0")])
    assert any("resources.gpu_mem_gb = 80" in e for e in hf.variant_problems(small, "cuda13", 80)[0])
    assert not hf.variant_problems(small, "cuda13", 40)[0]


def test_the_zero_devices_reason_tells_a_driver_problem_from_a_partition_problem():
    assert hf.zero_devices_reason(NODES["cpu node"][0], "cuda13").startswith("partition problem: node c1 has no "
                                                                             "NVIDIA driver")
    driver = hf.zero_devices_reason(NODES["rocky9, driver 550"][0], "cuda13")
    assert driver.startswith("driver problem: node g2 has NVIDIA driver 550.54.15, older than 580.65.06")
    assert driver.endswith("set environments.gpu_variant: cuda12")
    assert "no variant runs" in hf.zero_devices_reason(NODES["driver 470"][0], "cuda12")


def test_the_guard_message_on_this_machine_reads_its_facts():
    """This machine has no NVIDIA driver: the guard calls it a partition problem, not a driver one."""
    facts = hf.read_host()
    msg = gpu_problem(1, "vllm", 0, "n1", "13.0", "0")
    assert "finds 0 CUDA device" in msg
    if facts.driver is None:
        assert "partition problem" in msg and "driver problem" not in msg
    assert "CPU build" in gpu_problem(1, "vllm", 0, "n1", None, "0")


def test_read_host_reads_this_node_and_round_trips():
    facts = hf.read_host()
    assert facts.glibc and hf.version_tuple(facts.glibc) >= (2, 17)
    assert hf.HostFacts.from_dict(facts.as_dict()) == facts


def test_the_schema_enum_is_the_variants_and_each_file_exists():
    schema = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())
    prop = schema["properties"]["environments"]["properties"]["gpu_variant"]
    assert prop["enum"] == hf.names() and prop["default"] in hf.names()
    for v in hf.VARIANTS.values():
        assert (REPO / v.file).is_file(), v.file
    with pytest.raises(KeyError, match="known: cuda13, cuda12"):
        hf.get("cuda11")
