"""5D-CP: global z-scores, dimension means, per-model means and the length-excluded variant."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from thinkprobe.metrics import DIMENSIONS, METRIC_NAMES
from thinkprobe.profile import model_profiles, trace_profiles

pytestmark = pytest.mark.fast


def table():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.gamma(2.0, size=(6, 19)), columns=list(METRIC_NAMES))
    df.insert(0, "trace_id", [f"t{i}" for i in range(6)])
    df.insert(1, "model", ["a", "a", "a", "b", "b", "b"])
    df["GD"] = 0.3  # constant over the corpus: z must be 0, not NaN
    return df


def test_zscores_and_dimensions_by_hand():
    df = table()
    prof, stats = trace_profiles(df)
    bf = df["BF"].to_numpy()
    np.testing.assert_allclose(prof["z_BF"], (bf - bf.mean()) / bf.std(ddof=0))
    assert (prof["z_GD"] == 0).all()
    depth = (prof["z_MEC"] + prof["z_MBD"]) / 2
    np.testing.assert_allclose(prof["Depth"], depth)
    structure = sum(prof[f"z_{m}"] for m in DIMENSIONS["Structure"]) / 6
    np.testing.assert_allclose(prof["Structure"], structure)
    assert stats.loc["BF", "mean"] == pytest.approx(bf.mean())


def test_model_profile_is_mean_over_its_traces():
    prof, _ = trace_profiles(table())
    models = model_profiles(prof)
    assert list(models["model"]) == ["a", "b"] and list(models["n_traces"]) == [3, 3]
    assert models.loc[0, "Breadth"] == pytest.approx(prof["Breadth"][:3].mean())
    # global z-scores: the two model means of any dimension balance around zero (equal group sizes)
    assert models["Efficiency"].sum() == pytest.approx(0.0, abs=1e-12)


def test_length_excluded_variant_only_changes_efficiency():
    df = table()
    full, _ = trace_profiles(df)
    lean, _ = trace_profiles(df, exclude=("AT", "ATU", "TPI"))
    for dim in ("Breadth", "Depth", "Structure", "Metacognition"):
        np.testing.assert_allclose(full[dim], lean[dim])
    np.testing.assert_allclose(lean["Efficiency"], lean["z_RR"])
    assert "z_AT" not in lean.columns
    with pytest.raises(ValueError, match="unknown metric"):
        trace_profiles(df, exclude=("XX",))


def test_app_g_dimension_map_makes_efficiency_tpi_and_rr():
    """App G's reading: Efficiency = mean(z_TPI, z_RR), AT and ATU z-scored but in no dimension."""
    df = table()
    prof, _ = trace_profiles(df, dimensions="app_g")
    np.testing.assert_allclose(prof["Efficiency"], (prof["z_TPI"] + prof["z_RR"]) / 2)
    assert "z_AT" in prof.columns and "z_ATU" in prof.columns
    default, _ = trace_profiles(df)
    np.testing.assert_allclose(default["Efficiency"],
                               (default["z_TPI"] + default["z_RR"] + default["z_AT"] + default["z_ATU"]) / 4)
    for dim in ("Breadth", "Depth", "Structure", "Metacognition"):
        np.testing.assert_allclose(prof[dim], default[dim])
    # length-excluded under app_g: removing TPI leaves Efficiency = z_RR alone (App G: "RR alone = 0.332")
    lean, _ = trace_profiles(df, exclude=("AT", "ATU", "TPI"), dimensions="app_g")
    np.testing.assert_allclose(lean["Efficiency"], lean["z_RR"])


def test_custom_dimension_map_and_model_means():
    df = table()
    prof, _ = trace_profiles(df, dimensions={"Explore": ["BF", "UPC"], "Economy": ["RR"]})
    assert [c for c in prof.columns if not c.startswith("z_") and c not in ("trace_id", "model")] == [
        "Explore", "Economy"]
    np.testing.assert_allclose(prof["Explore"], (prof["z_BF"] + prof["z_UPC"]) / 2)
    models = model_profiles(prof)
    assert list(models.columns) == ["model", "n_traces", "Explore", "Economy"]
    with pytest.raises(ValueError, match="unknown dimension map"):
        trace_profiles(df, dimensions="paper")
