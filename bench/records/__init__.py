"""Records and provenance: the preflight guard before a measurement, the manifest of every result file
(provenance) and the code version it was measured with. Above bench.core, bench.data and bench.integrity."""
