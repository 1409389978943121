//! Hardware tests: need a ConnectX bound to vfio-pci. Run with
//! `BAREVERBS_VFIO_BDF=0000:3b:00.0 cargo test -p bareverbs-vfio -- --ignored`.

#[cfg(target_os = "linux")]
fn bdf() -> Option<String> {
    std::env::var("BAREVERBS_VFIO_BDF").ok()
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs a ConnectX bound to vfio-pci (BAREVERBS_VFIO_BDF)"]
fn hw_devinfo() {
    let Some(bdf) = bdf() else {
        eprintln!("BAREVERBS_VFIO_BDF not set; skipping");
        return;
    };
    let info = bareverbs_vfio::devinfo_vfio(&bdf).unwrap_or_else(|e| panic!("{e}"));
    assert!(info.max_qp > 0 && info.max_qp_wr > 0);
    eprintln!("{info:#?}");
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs a ConnectX bound to vfio-pci (BAREVERBS_VFIO_BDF)"]
fn hw_bring_up_objects_teardown() {
    use bareverbs::cqe::CqeSize;
    let Some(bdf) = bdf() else {
        eprintln!("BAREVERBS_VFIO_BDF not set; skipping");
        return;
    };
    let (_nic, mut d) =
        bareverbs_vfio::bring_up_vfio(&bdf, bareverbs::device::DeviceConfig::default())
            .unwrap_or_else(|e| panic!("{e}"));
    let pd = d.alloc_pd().unwrap();
    let cq = d.create_cq(256, CqeSize::B64).unwrap();
    d.destroy_cq(cq).unwrap();
    d.dealloc_pd(pd).unwrap();
    let (rep, ..) = d.teardown();
    assert_eq!(rep.first_error, None, "{rep:?}");
    assert_eq!(rep.pages_leaked, 0);
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs a ConnectX bound to vfio-pci (BAREVERBS_VFIO_BDF)"]
fn hw_loopback_selftest() {
    let Some(bdf) = bdf() else {
        eprintln!("BAREVERBS_VFIO_BDF not set; skipping");
        return;
    };
    for blueflame in [false, true] {
        let opts = bareverbs::selftest::SelfTestOptions {
            blueflame,
            ..Default::default()
        };
        let r = bareverbs_vfio::selftest_vfio(&bdf, opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.verified_bytes, (4096, 1000, 4096));
        eprintln!("blueflame {blueflame}: {r:?}");
    }
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs a ConnectX bound to vfio-pci (BAREVERBS_VFIO_BDF)"]
fn hw_msix_wait_cq_events_times_out() {
    use bareverbs::cqe::CqeSize;
    use bareverbs::device::Interrupts;
    let Some(bdf) = bdf() else {
        eprintln!("BAREVERBS_VFIO_BDF not set; skipping");
        return;
    };
    let (nic, mut d) =
        bareverbs_vfio::bring_up_vfio(&bdf, bareverbs::device::DeviceConfig::default())
            .unwrap_or_else(|e| panic!("{e}"));
    let mut bar = nic.bar0();
    let n = bar.irq_vectors();
    eprintln!("MSI-X vectors: {n}");
    assert!(n >= 2, "a ConnectX has a control and completion vectors");
    assert!(!bar.wait_irq(1, 1_000), "vector 1 not enabled yet");
    assert!(!bar.enable_irq(n), "out of range");
    d.create_comp_eq(1).unwrap();
    let cq = d.create_cq_on(256, CqeSize::B64, Some(1)).unwrap();
    let mut cqns = [0u32; 8];
    // Nothing posted: enables vector 1 through VFIO, then times out.
    let t = std::time::Instant::now();
    let got = d.wait_cq_events(1, 50_000, &mut cqns).unwrap();
    assert_eq!(got.n, 0);
    assert!(t.elapsed() >= std::time::Duration::from_millis(50));
    d.destroy_cq(cq).unwrap();
    let (rep, ..) = d.teardown();
    assert_eq!(rep.first_error, None, "{rep:?}");
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs a ConnectX bound to vfio-pci (BAREVERBS_VFIO_BDF)"]
fn hw_debug_of_platform_types() {
    use bareverbs::device::UarMap;
    let Some(bdf) = bdf() else {
        eprintln!("BAREVERBS_VFIO_BDF not set; skipping");
        return;
    };
    let nic = bareverbs_vfio::VfioNic::open(&bdf).unwrap_or_else(|e| panic!("{e}"));
    let mut bar = nic.bar0();
    let uar = bar.map_uar(1).expect("UAR 1 inside BAR0");
    let dma = nic.dma();
    let s = format!("{nic:?}\n{bar:?}\n{uar:?}\n{dma:?}");
    eprintln!("{s}");
    assert!(s.contains("VfioNic {") && s.contains("VfioBar0 {"), "{s}");
    assert!(
        s.contains("index: 1") && s.contains("bar0_offset: 0x1000"),
        "{s}"
    );
    assert!(s.contains("live_buffers: 0"), "{s}");
}
