//! # bareverbs-vfio — a real ConnectX through Linux VFIO
//!
//! Opens a PCI function with `vfio-ioctls`, maps BAR0, allocates and
//! IOMMU-maps DMA memory and implements the `bareverbs` platform traits, so
//! the same bring-up and data-path code that runs on the simulator drives
//! hardware. (Filled by the bring-up issue.)
#![deny(missing_docs)]
