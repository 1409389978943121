//! MSI-X interrupts through VFIO: one eventfd per enabled vector
//! ([`Msix`]), the `vfio_irq_set` argument that attaches it
//! ([`irq_set_words`]) and the wait on it ([`wait_eventfd`]). The core's
//! [`bareverbs::device::Interrupts`] on [`super::VfioBar0`] is built on these.
//!
//! The sequence (docs/two-hosts-facts.md §5.7): `VFIO_DEVICE_GET_IRQ_INFO`
//! for `VFIO_PCI_MSIX_IRQ_INDEX` must report `VFIO_IRQ_INFO_EVENTFD`, and
//! its `count` is the number of vectors. The first `VFIO_DEVICE_SET_IRQS`
//! (`DATA_EVENTFD | ACTION_TRIGGER`) covers every vector (start 0, count =
//! the vector count, −1 where no eventfd is attached); later ones attach a
//! single vector (start = vector, count 1). Eventfds are made with
//! `EFD_CLOEXEC | EFD_NONBLOCK`; a wait polls the eventfd and reads its
//! 8-byte counter to consume what fired.
//!
//! What comes from the rust-vmm crates: the eventfds are
//! `vmm_sys_util::eventfd::EventFd`, the ioctl number and call are
//! `vmm-sys-util`'s `ioctl_expr` / `ioctl_with_ptr`, the vector count is
//! `VfioDevice::get_irq_info` and turning MSI-X off is
//! `VfioDevice::disable_irq`. Attaching stays here: `VfioDevice::enable_irq`
//! (vfio-ioctls 0.10) always sends start 0 with one `&EventFd` per vector,
//! so it can neither attach one vector at `start = vector, count = 1` nor
//! leave a vector unattached (−1) in the first, all-vectors call; with it,
//! every later attach would re-send every vector, and the kernel re-requests
//! the interrupt of each vector it is handed.

use std::fmt;
use std::io;
use std::os::fd::AsRawFd;
use std::os::raw::c_ulong;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};
use vfio_bindings::bindings::vfio::{
    vfio_irq_set, VFIO_BASE, VFIO_IRQ_INFO_EVENTFD, VFIO_IRQ_SET_ACTION_TRIGGER,
    VFIO_IRQ_SET_DATA_EVENTFD, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_TYPE,
};
use vfio_ioctls::VfioDevice;
use vmm_sys_util::eventfd::{EventFd, EFD_CLOEXEC, EFD_NONBLOCK};
use vmm_sys_util::ioctl::{ioctl_expr, ioctl_with_ptr, _IOC_NONE};

/// A new eventfd for an MSI-X vector: counter 0, `EFD_CLOEXEC |
/// EFD_NONBLOCK` (so [`wait_eventfd`] can read it without blocking).
pub(super) fn new_eventfd() -> io::Result<EventFd> {
    EventFd::new(EFD_CLOEXEC | EFD_NONBLOCK)
}

/// `VFIO_DEVICE_SET_IRQS` = `_IO(VFIO_TYPE, VFIO_BASE + 10)` (0x3B6E).
pub(super) const VFIO_DEVICE_SET_IRQS: c_ulong =
    ioctl_expr(_IOC_NONE, VFIO_TYPE as u32, VFIO_BASE + 10, 0);

/// Bytes of the fixed `vfio_irq_set` header (argsz, flags, index, start,
/// count: five `u32`s); the eventfds (`s32` each) follow it.
pub(super) const IRQ_SET_HEADER: usize = 20;

/// The `vfio_irq_set` words attaching `fds` (−1: none / detach) to the
/// MSI-X vectors `start ..` with `DATA_EVENTFD | ACTION_TRIGGER`: argsz,
/// flags, index, start, count, then one word per fd (native endian).
pub(super) fn irq_set_words(start: u32, fds: &[i32]) -> Vec<u32> {
    let argsz = IRQ_SET_HEADER + 4 * fds.len();
    let mut w = Vec::with_capacity(5 + fds.len());
    w.extend_from_slice(&[
        argsz as u32,
        VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
        VFIO_PCI_MSIX_IRQ_INDEX,
        start,
        fds.len() as u32,
    ]);
    // The kernel reads the fds as s32; the word keeps the same bits.
    w.extend(fds.iter().map(|&fd| fd as u32));
    w
}

/// Where `VFIO_DEVICE_SET_IRQS` goes: the VFIO device, or a recorder in
/// tests.
pub(super) trait SetIrqs: Send {
    /// Issues `VFIO_DEVICE_SET_IRQS` with `words` (a whole `vfio_irq_set`,
    /// as built by [`irq_set_words`]).
    fn set_irqs(&self, words: &[u32]) -> io::Result<()>;
    /// Turns MSI-X off for the function (`DATA_NONE | ACTION_TRIGGER`,
    /// start 0, count 0), which also releases every eventfd VFIO holds.
    fn disable_msix(&self) -> io::Result<()>;
}

impl SetIrqs for Arc<VfioDevice> {
    fn set_irqs(&self, words: &[u32]) -> io::Result<()> {
        let argsz = words.first().copied().unwrap_or(0) as usize;
        // The header must be there and argsz must not exceed the buffer
        // (the kernel reads argsz bytes from it).
        if words.len() * 4 < IRQ_SET_HEADER || argsz > words.len() * 4 || argsz < IRQ_SET_HEADER {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: `words` is a live, 4-byte aligned buffer of at least
        // `argsz` bytes laid out as `struct vfio_irq_set` (five u32 header
        // fields then the s32 eventfds; checked by the unit tests against
        // vfio-bindings). VFIO_DEVICE_SET_IRQS only reads it, and the
        // device fd stays open for the call (we hold the Arc).
        let r = unsafe {
            ioctl_with_ptr(
                &**self,
                VFIO_DEVICE_SET_IRQS,
                words.as_ptr().cast::<vfio_irq_set>(),
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    fn disable_msix(&self) -> io::Result<()> {
        self.disable_irq(VFIO_PCI_MSIX_IRQ_INDEX)
            .map_err(io::Error::other)
    }
}

/// The MSI-X vectors of one function and the eventfds attached to them.
/// Dropping it turns MSI-X off (VFIO drops its eventfd references), then
/// closes the eventfds.
pub(super) struct Msix {
    set: Option<Box<dyn SetIrqs>>,
    /// One slot per vector; `Some` once attached.
    fds: Vec<Option<Arc<EventFd>>>,
    /// Whether the first (all-vectors) `SET_IRQS` has been done.
    started: bool,
}

/// The vector count, whether MSI-X is on and which vectors have which
/// eventfd, as `(vector, fd)` pairs (never the eventfds' counters).
impl fmt::Debug for Msix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let attached: Vec<(usize, i32)> = self
            .fds
            .iter()
            .enumerate()
            .filter_map(|(v, e)| Some((v, e.as_ref()?.as_raw_fd())))
            .collect();
        f.debug_struct("Msix")
            .field("vectors", &self.fds.len())
            .field("has_device", &self.set.is_some())
            .field("started", &self.started)
            .field("attached", &attached)
            .finish()
    }
}

impl Msix {
    /// No interrupts (a function without usable MSI-X).
    pub(super) fn none() -> Msix {
        Msix {
            set: None,
            fds: Vec::new(),
            started: false,
        }
    }

    /// `vectors` MSI-X vectors reached through `set`.
    pub(super) fn new(set: Box<dyn SetIrqs>, vectors: u16) -> Msix {
        Msix {
            set: Some(set),
            fds: (0..vectors).map(|_| None).collect(),
            started: false,
        }
    }

    /// The MSI-X vectors of `device`: `VFIO_DEVICE_GET_IRQ_INFO` for the
    /// MSI-X index (queried by `vfio-ioctls` when it opened the device);
    /// none unless it reports `VFIO_IRQ_INFO_EVENTFD` and a non-zero count.
    pub(super) fn for_device(device: &Arc<VfioDevice>) -> Msix {
        match device.get_irq_info(VFIO_PCI_MSIX_IRQ_INDEX) {
            Some(info) if info.flags & VFIO_IRQ_INFO_EVENTFD != 0 && info.count > 0 => {
                let n = u16::try_from(info.count).unwrap_or(u16::MAX);
                Msix::new(Box::new(device.clone()), n)
            }
            _ => Msix::none(),
        }
    }

    /// Vectors the function has.
    pub(super) fn vectors(&self) -> u16 {
        // `new` made at most u16::MAX slots.
        self.fds.len() as u16
    }

    /// Whether `vector` has an eventfd attached.
    #[cfg(test)]
    pub(super) fn is_enabled(&self, vector: u16) -> bool {
        matches!(self.fds.get(vector as usize), Some(Some(_)))
    }

    /// The eventfd of an enabled `vector`.
    pub(super) fn eventfd(&self, vector: u16) -> Option<Arc<EventFd>> {
        self.fds.get(vector as usize)?.clone()
    }

    /// Attaches a new eventfd to `vector` (nothing if already attached).
    /// False when out of range, when no eventfd could be made, or when
    /// VFIO refused (the eventfd is then closed and the vector stays off).
    pub(super) fn enable(&mut self, vector: u16) -> bool {
        let v = vector as usize;
        if v >= self.fds.len() {
            return false;
        }
        if self.fds[v].is_some() {
            return true;
        }
        let Some(set) = self.set.as_ref() else {
            return false;
        };
        let Ok(efd) = new_eventfd() else {
            return false;
        };
        let fd = efd.as_raw_fd();
        let words = if self.started {
            irq_set_words(u32::from(vector), &[fd])
        } else {
            let all: Vec<i32> = (0..self.fds.len())
                .map(|i| match &self.fds[i] {
                    _ if i == v => fd,
                    Some(e) => e.as_raw_fd(),
                    None => -1,
                })
                .collect();
            irq_set_words(0, &all)
        };
        if set.set_irqs(&words).is_err() {
            return false;
        }
        self.started = true;
        self.fds[v] = Some(Arc::new(efd));
        true
    }
}

impl Drop for Msix {
    fn drop(&mut self) {
        if self.started {
            if let Some(set) = self.set.as_ref() {
                // Best effort: a failure leaves VFIO holding its own
                // references, which it drops when the device is closed.
                let _ = set.disable_msix();
            }
        }
        // The eventfds close as `fds` drops (waiters holding an Arc keep
        // theirs until they return).
    }
}

/// A `Debug` view of MSI-X state shared behind a mutex that never blocks:
/// while another holder (or this thread) has the lock it prints
/// `Msix { <locked> }` instead of waiting.
pub(super) struct SharedMsix<'a>(pub(super) &'a Mutex<Msix>);

impl fmt::Debug for SharedMsix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.try_lock() {
            Ok(m) => m.fmt(f),
            Err(TryLockError::Poisoned(p)) => p.get_ref().fmt(f),
            Err(TryLockError::WouldBlock) => f.write_str("Msix { <locked> }"),
        }
    }
}

/// Locks `m`, taking the state even if a holder panicked (the state is
/// only ever changed by complete assignments).
pub(super) fn lock(m: &Mutex<Msix>) -> MutexGuard<'_, Msix> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits up to `timeout_us` µs for `efd` to become readable and reads its
/// counter. True when it fired (counter consumed), false on timeout or
/// error. Interrupted waits resume with the remaining time.
pub(super) fn wait_eventfd(efd: &EventFd, timeout_us: u64) -> bool {
    let deadline = Instant::now().checked_add(Duration::from_micros(timeout_us));
    loop {
        // A counter already pending needs no poll.
        match efd.read() {
            Ok(_) => return true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
        let left = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => Duration::MAX,
        };
        if left.is_zero() {
            return false;
        }
        // One poll waits at most a day; the loop covers longer timeouts.
        let left = left.min(Duration::from_secs(86_400));
        let ts = libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: left.subsec_nanos() as _,
        };
        let mut pfd = libc::pollfd {
            fd: efd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for an eventfd we hold open for
        // the call, `ts` a valid timespec (tv_nsec < 1e9); a null sigmask
        // leaves the signal mask unchanged (plain poll with a timeout).
        let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return false;
        }
        if r == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        // Readable, interrupted or woken early: try the read again.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};
    use vfio_bindings::bindings::vfio::VFIO_IRQ_SET_DATA_NONE;

    /// Records every SET_IRQS; refuses when `fail` is set.
    #[derive(Clone, Default)]
    struct Rec {
        calls: Arc<Mutex<Vec<Vec<u32>>>>,
        fail: Arc<std::sync::atomic::AtomicBool>,
    }

    impl SetIrqs for Rec {
        fn set_irqs(&self, words: &[u32]) -> io::Result<()> {
            if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            self.calls.lock().unwrap().push(words.to_vec());
            Ok(())
        }
        fn disable_msix(&self) -> io::Result<()> {
            self.set_irqs(&irq_disable_words())
        }
    }

    /// The `vfio_irq_set` words of `SetIrqs::disable_msix`: what
    /// `VfioDevice::disable_irq(VFIO_PCI_MSIX_IRQ_INDEX)` sends
    /// (`DATA_NONE | ACTION_TRIGGER`, start 0, count 0).
    fn irq_disable_words() -> Vec<u32> {
        vec![
            IRQ_SET_HEADER as u32,
            VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
            VFIO_PCI_MSIX_IRQ_INDEX,
            0,
            0,
        ]
    }

    impl Rec {
        fn calls(&self) -> Vec<Vec<u32>> {
            self.calls.lock().unwrap().clone()
        }
    }

    const TRIGGER_EVENTFD: u32 = 0x24;

    #[test]
    fn set_irqs_ioctl_number_and_layout() {
        assert_eq!(VFIO_DEVICE_SET_IRQS, 0x3B6E);
        assert_eq!(VFIO_PCI_MSIX_IRQ_INDEX, 2);
        assert_eq!(
            VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
            TRIGGER_EVENTFD
        );
        assert_eq!(VFIO_IRQ_INFO_EVENTFD, 1);
        assert_eq!(size_of::<vfio_irq_set>(), IRQ_SET_HEADER);
        assert_eq!(offset_of!(vfio_irq_set, argsz), 0);
        assert_eq!(offset_of!(vfio_irq_set, flags), 4);
        assert_eq!(offset_of!(vfio_irq_set, index), 8);
        assert_eq!(offset_of!(vfio_irq_set, start), 12);
        assert_eq!(offset_of!(vfio_irq_set, count), 16);
        assert_eq!(offset_of!(vfio_irq_set, data), 20);
        assert!(std::mem::align_of::<vfio_irq_set>() <= std::mem::align_of::<u32>());
    }

    #[test]
    fn irq_set_words_all_vectors() {
        let w = irq_set_words(0, &[7, -1, -1, 9]);
        assert_eq!(w.len(), 5 + 4);
        assert_eq!(w[0] as usize, 20 + 4 * 4);
        assert_eq!(w[0] as usize, w.len() * 4);
        assert_eq!(w[1], TRIGGER_EVENTFD);
        assert_eq!(w[2], 2);
        assert_eq!(w[3], 0);
        assert_eq!(w[4], 4);
        assert_eq!(&w[5..], &[7, u32::MAX, u32::MAX, 9]);
        // Byte view as the kernel reads it: data at byte 20, s32 native.
        let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_ne_bytes()).collect();
        assert_eq!(i32::from_ne_bytes(bytes[24..28].try_into().unwrap()), -1);
    }

    #[test]
    fn irq_set_words_one_vector_and_disable() {
        assert_eq!(
            irq_set_words(3, &[11]),
            vec![24, TRIGGER_EVENTFD, 2, 3, 1, 11]
        );
        assert_eq!(irq_disable_words(), vec![20, 0x21, 2, 0, 0]);
    }

    #[test]
    fn first_enable_covers_all_vectors_then_single() {
        let rec = Rec::default();
        let mut m = Msix::new(Box::new(rec.clone()), 4);
        assert_eq!(m.vectors(), 4);
        assert!(!m.is_enabled(2));
        assert!(m.enable(2));
        let fd2 = m.eventfd(2).unwrap().as_raw_fd() as u32;
        let c = rec.calls();
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0],
            vec![
                36,
                TRIGGER_EVENTFD,
                2,
                0,
                4,
                u32::MAX,
                u32::MAX,
                fd2,
                u32::MAX
            ]
        );
        // Already enabled: no new SET_IRQS.
        assert!(m.enable(2));
        assert_eq!(rec.calls().len(), 1);
        assert!(m.enable(0));
        let fd0 = m.eventfd(0).unwrap().as_raw_fd() as u32;
        assert_ne!(fd0, fd2);
        assert_eq!(rec.calls()[1], vec![24, TRIGGER_EVENTFD, 2, 0, 1, fd0]);
        assert!(m.is_enabled(0) && m.is_enabled(2) && !m.is_enabled(1));
        drop(m);
        let c = rec.calls();
        assert_eq!(c.len(), 3);
        assert_eq!(c[2], irq_disable_words());
    }

    #[test]
    fn out_of_range_and_refused() {
        let rec = Rec::default();
        let mut m = Msix::new(Box::new(rec.clone()), 2);
        assert!(!m.enable(2));
        assert!(!m.enable(u16::MAX));
        assert!(m.eventfd(5).is_none());
        rec.fail.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(!m.enable(1));
        assert!(!m.is_enabled(1));
        rec.fail.store(false, std::sync::atomic::Ordering::SeqCst);
        // Still the first successful SET_IRQS: it must cover all vectors.
        assert!(m.enable(1));
        assert_eq!(rec.calls()[0][4], 2);
        assert_eq!(rec.calls()[0][3], 0);
        assert_eq!(rec.calls()[0][5], u32::MAX);
    }

    #[test]
    fn no_msix_has_no_vectors() {
        let mut m = Msix::none();
        assert_eq!(m.vectors(), 0);
        assert!(!m.enable(0));
        assert!(!m.is_enabled(0));
    }

    #[test]
    fn drop_without_enable_sends_nothing() {
        let rec = Rec::default();
        drop(Msix::new(Box::new(rec.clone()), 3));
        assert!(rec.calls().is_empty());
    }

    #[test]
    fn eventfd_flags_and_counter() {
        let e = new_eventfd().unwrap();
        // SAFETY: F_GETFD/F_GETFL on an fd we hold open; no pointers.
        let (fdfl, fl) = unsafe {
            (
                libc::fcntl(e.as_raw_fd(), libc::F_GETFD),
                libc::fcntl(e.as_raw_fd(), libc::F_GETFL),
            )
        };
        assert_ne!(fdfl & libc::FD_CLOEXEC, 0);
        assert_ne!(fl & libc::O_NONBLOCK, 0);
        assert_eq!(e.read().unwrap_err().kind(), io::ErrorKind::WouldBlock);
        e.write(2).unwrap();
        e.write(3).unwrap();
        assert_eq!(e.read().unwrap(), 5);
    }

    #[test]
    fn wait_times_out() {
        let e = new_eventfd().unwrap();
        let t = Instant::now();
        assert!(!wait_eventfd(&e, 20_000));
        assert!(t.elapsed() >= Duration::from_millis(20));
        assert!(!wait_eventfd(&e, 0));
    }

    #[test]
    fn wait_fires_and_consumes() {
        let e = new_eventfd().unwrap();
        e.write(3).unwrap();
        assert!(wait_eventfd(&e, 1_000_000));
        // Consumed: the next wait times out.
        assert!(!wait_eventfd(&e, 1_000));
    }

    #[test]
    fn wait_fires_from_another_thread() {
        let e = Arc::new(new_eventfd().unwrap());
        let e2 = e.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            e2.write(1).unwrap();
        });
        let t = Instant::now();
        assert!(wait_eventfd(&e, 5_000_000));
        assert!(t.elapsed() < Duration::from_secs(5));
        h.join().unwrap();
    }

    #[test]
    fn wait_huge_timeout_does_not_overflow() {
        let e = new_eventfd().unwrap();
        e.write(1).unwrap();
        assert!(wait_eventfd(&e, u64::MAX));
    }

    /// VFIO signals the vector through its own reference to the eventfd
    /// (a second fd on the same counter, as `try_clone` makes): the wait
    /// on the vector's eventfd sees it and consumes the whole count.
    #[test]
    fn vector_eventfd_fires_through_another_reference() {
        let rec = Rec::default();
        let mut m = Msix::new(Box::new(rec.clone()), 2);
        assert!(m.enable(1));
        let mine = m.eventfd(1).unwrap();
        let kernel_side = mine.try_clone().unwrap();
        assert_ne!(kernel_side.as_raw_fd(), mine.as_raw_fd());
        assert!(!wait_eventfd(&mine, 1_000));
        kernel_side.write(1).unwrap();
        kernel_side.write(1).unwrap();
        assert!(wait_eventfd(&mine, 1_000_000));
        assert_eq!(
            kernel_side.read().unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        // A waiter keeps its eventfd open after the vectors are dropped.
        drop(m);
        kernel_side.write(4).unwrap();
        assert_eq!(mine.read().unwrap(), 4);
    }

    /// Debug shows the vectors and attached eventfds without touching the
    /// counters.
    #[test]
    fn debug_lists_attached_vectors_and_leaves_counters() {
        let rec = Rec::default();
        let mut m = Msix::new(Box::new(rec.clone()), 3);
        assert!(m.enable(2));
        let e = m.eventfd(2).unwrap();
        e.write(7).unwrap();
        let d = format!("{m:?}");
        assert!(d.contains("vectors: 3"), "{d}");
        assert!(d.contains("started: true"), "{d}");
        assert!(d.contains(&format!("[(2, {})]", e.as_raw_fd())), "{d}");
        assert_eq!(e.read().unwrap(), 7);
        let none = format!("{:?}", Msix::none());
        assert!(none.contains("vectors: 0") && none.contains("has_device: false"));
    }

    /// The shared view never waits for the lock (a holder may be the
    /// thread formatting), and shows the state once it is free.
    #[test]
    fn shared_debug_does_not_wait_for_the_lock() {
        let m = Mutex::new(Msix::new(Box::new(Rec::default()), 2));
        {
            let _held = lock(&m);
            assert_eq!(format!("{:?}", SharedMsix(&m)), "Msix { <locked> }");
        }
        assert!(format!("{:?}", SharedMsix(&m)).contains("vectors: 2"));
    }
}
