"""Shared fixtures of the rlflow Python tests (run by ctest with PYTHONPATH at the build's python/)."""

import os
import pathlib

import pytest

import rlflow

SOURCE_DIR = pathlib.Path(os.environ.get("RLFLOW_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def data_dir():
    return SOURCE_DIR / "tests" / "data"


@pytest.fixture(scope="session")
def squeezenet_file(tmp_path_factory):
    """SqueezeNet 1.1 from the zoo with seeded random weights, written as an ONNX file."""
    path = tmp_path_factory.mktemp("models") / "squeezenet1_1.onnx"
    rlflow.zoo("squeezenet1_1", seed=3).save(path)
    return path
