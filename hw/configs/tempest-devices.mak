# Device configuration for qemu-system-aarch64 as built by scripts/tempest:
# only the tempest machine and what it selects (GICv3, PL011, the node
# controller, virtio-mmio transports), and the two virtio devices a Linux
# node plugs into them (docs/linux.rst).  Passed to configure as
# --with-devices-aarch64.
CONFIG_TEMPEST=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_9P=y
