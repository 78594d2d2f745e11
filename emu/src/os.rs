//! The relay's system setup: scheduling, signals, timers and epoll, each one call.

use std::os::fd::RawFd;

pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn die(message: &str) -> ! {
    eprintln!("linklab-emu: error: {message}");
    std::process::exit(1);
}

pub fn check(rc: libc::c_int, what: &str) -> libc::c_int {
    if rc < 0 {
        die(&format!("{what}: {}", std::io::Error::last_os_error()));
    }
    rc
}

/// Real-time scheduling and, with `cpu`, pinning. Timers fire when asked, not up to
/// 50 us later (the default slack).
pub fn set_scheduling(priority: i32, cpu: Option<usize>) {
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        // Real-time scheduling: frames leave on time even when other processes keep
        // the CPUs busy (netem runs in the kernel's softirq, ahead of every process).
        if priority > 0 {
            let param = libc::sched_param { sched_priority: priority.min(99) };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                eprintln!(
                    "linklab-emu: warning: SCHED_FIFO priority {priority}: {} (running with normal scheduling)",
                    std::io::Error::last_os_error()
                );
            }
        }
        if let Some(cpu) = cpu {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            check(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), "sched_setaffinity");
        }
    }
}

/// SIGTERM, SIGINT and SIGHUP arrive through this fd, so shutdown happens in the loop.
pub fn signal_fd() -> RawFd {
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGTERM);
        libc::sigaddset(&mut mask, libc::SIGINT);
        libc::sigaddset(&mut mask, libc::SIGHUP);
        check(libc::sigprocmask(libc::SIG_BLOCK, &mask, std::ptr::null_mut()), "sigprocmask");
        check(libc::signalfd(-1, &mask, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC), "signalfd")
    }
}

pub fn timer_fd() -> RawFd {
    unsafe { check(libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC), "timerfd") }
}

/// The timer fires at `deadline` (CLOCK_MONOTONIC ns).
pub fn arm_timer(tfd: RawFd, deadline: u64) {
    let spec = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec {
            tv_sec: (deadline / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
        },
    };
    unsafe { libc::timerfd_settime(tfd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
}

/// An epoll instance watching `fds` for input, each reported with its token.
pub fn epoll_on(fds: &[(RawFd, u64)]) -> RawFd {
    let epfd: RawFd = unsafe { check(libc::epoll_create1(libc::EPOLL_CLOEXEC), "epoll") };
    for &(fd, token) in fds {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        unsafe { check(libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev), "epoll_ctl") };
    }
    epfd
}

/// Wait up to `wait_ms` (-1: until an event) for events; how many came.
pub fn wait_events(epfd: RawFd, events: &mut [libc::epoll_event], wait_ms: i32) -> usize {
    loop {
        let n = unsafe { libc::epoll_wait(epfd, events.as_mut_ptr(), events.len() as i32, wait_ms) };
        if n >= 0 {
            return n as usize;
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            die(&format!("epoll_wait: {err}"));
        }
    }
}

/// Read and discard what `fd` holds (a timer's count, a signal's info).
pub fn consume(fd: RawFd) {
    let mut buf = [0u8; 128];
    unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
}
