//! SIGTERM / SIGINT: the first asks the stage to finish its batch, commit and exit; a second
//! exits at once (status 130), for an operator who does not want to wait for a stuck broker.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only async-signal-safe work here: an atomic swap and _exit.
    if STOP.swap(true, Ordering::SeqCst) {
        unsafe { libc::_exit(130) };
    }
}

/// A stop flag raised by SIGTERM/SIGINT (after [`install`]) or by the program itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stop;

impl Stop {
    /// Whether a stop was asked for.
    pub fn requested(self) -> bool {
        STOP.load(Ordering::SeqCst)
    }

    /// Ask for a stop (tests, and fatal errors in one worker stopping the others).
    pub fn request(self) {
        STOP.store(true, Ordering::SeqCst);
    }
}

/// Install the handlers for SIGTERM and SIGINT.
pub fn install() -> Stop {
    install_with(libc::SA_RESTART)
}

/// [`install`], with system calls interrupted rather than restarted: a read blocked on a quiet
/// pipe returns (`Interrupted`) so the reader sees the stop (`crawlsieve dedup`, whose input
/// may be a pipe that never ends). Only for a program that retries or handles `Interrupted`
/// at every call (std's `write_all` does).
pub fn install_interrupting() -> Stop {
    install_with(0)
}

fn install_with(flags: libc::c_int) -> Stop {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only touches an atomic and calls _exit, both async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = flags;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    Stop
}
