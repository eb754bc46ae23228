// fx::distributed: the process-group registry (axis names to transports), init/finalize and groups.
