"""The OpenVINO int8 adapter the registry loads (``adapter``), its model folder's manifest, the compile
settings (``config``) and runtime; the int8 phase (``bench.int8``) quantises, measures and compares with
it."""
