/// Data-parallel and sharded (FSDP-style) training helpers built from the collective primitives.
#pragma once
