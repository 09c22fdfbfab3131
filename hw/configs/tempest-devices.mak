# Device configuration for qemu-system-aarch64 as built by scripts/tempest:
# only the tempest machine and what it selects (GICv3, PL011, the node
# controller).  Passed to configure as --with-devices-aarch64.
CONFIG_TEMPEST=y
