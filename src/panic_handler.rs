//! The embedded build's panic handler. No path a caller can reach through
//! the C API panics (bad input gets a status, and the heap-free code never
//! indexes out of bounds or overflows on what it accepted), so this is a
//! last line that is never meant to run: it executes a permanently
//! undefined instruction, which traps into the firmware's HardFault
//! handler (as an `assert` in C firmware would), rather than looping or
//! returning into corrupt state. It calls nothing outside the library.

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // `udf` raises an UsageFault (a HardFault where that is masked).
    #[cfg(target_arch = "arm")]
    // SAFETY: `udf` only raises the fault; it reads and writes nothing.
    unsafe {
        core::arch::asm!("udf #0", options(noreturn, nomem, nostack))
    }
    #[cfg(not(target_arch = "arm"))]
    loop {
        core::hint::spin_loop();
    }
}
