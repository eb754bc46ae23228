// The numpy-style op layer (being written).
