"""The versions a project pins for its dependencies (hpu_port.device.pins)."""

import pytest

from hpu_port.device.pins import always_before, always_from, pins_in


def test_requirements_and_quoted_requirements_are_read():
    files = [
        ("requirements.txt", b"torch>=2.1\ntransformers==4.38.2 # pinned\naccelerate\npeft[x] >= 0.5 , <0.9\n-e .\n"),
        ("pyproject.toml", b'dependencies = ["Transformers>=4.51,<5", "datasets"]'),
        ("setup.py", b'install_requires=["transformers ~= 4.30.0; python_version > \'3.8\'"]'),
    ]
    assert pins_in(files) == (
        ("peft", ">=0.5,<0.9"),
        ("torch", ">=2.1"),
        ("transformers", "==4.38.2"),
        ("transformers", ">=4.51,<5"),
        ("transformers", "~=4.30.0"),
    )


@pytest.mark.parametrize(
    "specifiers, before, since",
    [
        ("==4.38.2", True, False),
        (">=4.51,<5", False, True),
        ("~=4.30.0", True, False),
        ("~=4.49", False, False),  # admits 4.50 and later 4.x releases
        ("<4.50", True, False),
        ("<=4.49.9", True, False),
        (">=4.40", False, False),
        (">4.50", False, True),
        ("==4.50.*", False, True),  # every 4.50.x
        ("==4.49.*", True, False),
        ("==4.*", False, False),  # admits 4.49 and 4.50
        ("!=4.49.0", False, False),
    ],
)
def test_whether_every_admitted_release_is_before_or_from_a_version(specifiers, before, since):
    assert always_before(specifiers, "4.50") is before
    assert always_from(specifiers, "4.50") is since
