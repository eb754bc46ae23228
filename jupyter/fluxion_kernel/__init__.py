"""Fluxion's Jupyter kernel for C++17 (kernel name fluxion-cpp17); see kernel.py."""
