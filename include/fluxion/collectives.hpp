/// Collectives over named axes (fx::all_sum and the others): across the mapped axis of an enclosing
/// fx::vmap(..., fx::axis_name(n)), or across the processes of a group registered under n.
#pragma once
