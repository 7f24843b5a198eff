"""The int8 comparison of ``analysis report`` (plan section "OpenVINO int8 variant"): ``comparison``."""
