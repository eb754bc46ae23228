// fx::distributed data-parallel training helpers (flat gradient buckets, the sharded mode).
