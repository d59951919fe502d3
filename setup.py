"""The package list, computed; everything else about the build is in pyproject.toml.

The catalogs live in the top-level ``catalogs/`` folder and ship as ``planner.catalogs``
(``[tool.setuptools.package-dir]`` in pyproject.toml). A pyproject-only configuration would need
every subpackage of ``planner`` listed by hand, because ``packages.find`` ignores ``package-dir``;
a forgotten one would be missing from ``pip install .`` but not from the editable install the tests use.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=sorted(
        {*find_namespace_packages(include=["planner", "planner.*"], exclude=["*.__pycache__"]), "planner.catalogs"}
    )
)
