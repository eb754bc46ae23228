"""python3 -m fluxion_kernel -f CONNECTION_FILE: what the kernelspec (kernel.json) runs."""
from ipykernel.kernelapp import IPKernelApp

from .kernel import FluxionKernel

IPKernelApp.launch_instance(kernel_class=FluxionKernel)
