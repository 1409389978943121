//! The Linux VFIO implementation of the platform traits ([ref §4.2, §7.2](bareverbs::reference)),
//! one concept per file: BAR0/UAR mapping (`bar`), the IOMMU DMA allocator
//! (`dma`), MSI-X interrupts (`irq`), the clock (`clock`), opening a function (`nic`) and running the
//! core on it (`bringup`). Every item is re-exported here.

mod bar;
mod bringup;
mod clock;
mod dma;
mod irq;
mod nic;

pub use bar::{VfioBar0, VfioUar};
pub use bringup::{bring_up_vfio, devinfo_vfio, selftest_vfio, VfioMlx5};
pub use clock::StdClock;
pub use dma::{map_dma_pages, IommuMap, VfioDma, HUGE_PAGE, HUGE_THRESHOLD, IOVA_BASE, IOVA_SPAN};
pub use nic::VfioNic;
