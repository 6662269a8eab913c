//! CPU cache-line instructions: write-back and store fences — the instruction (clwb, else
//! clflushopt, else clflush) is chosen once from CPUID, as the PM programming guides
//! prescribe — and read prefetches, which let a reader overlap the misses of records it
//! is about to read.

use std::sync::OnceLock;

/// Cache-line size assumed by every flush loop and by the crash simulator.
pub const CACHE_LINE: usize = 64;

/// The write-back instruction in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushInsn {
    /// Writes the line back and may keep it cached (best).
    Clwb,
    /// Writes back and evicts, weakly ordered.
    ClflushOpt,
    /// Writes back and evicts, serialising (slowest).
    Clflush,
    /// No cache-flush instruction on this architecture: only a compiler and memory fence.
    None,
}

impl FlushInsn {
    pub fn name(self) -> &'static str {
        match self {
            FlushInsn::Clwb => "clwb",
            FlushInsn::ClflushOpt => "clflushopt",
            FlushInsn::Clflush => "clflush",
            FlushInsn::None => "none",
        }
    }
}

/// The instruction this CPU offers, detected once.
pub fn flush_insn() -> FlushInsn {
    static INSN: OnceLock<FlushInsn> = OnceLock::new();
    *INSN.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> FlushInsn {
    use std::arch::x86_64::__cpuid_count;
    // CPUID leaf 7 sub-leaf 0, EBX: bit 24 CLWB, bit 23 CLFLUSHOPT.
    let leaf7 = __cpuid_count(7, 0);
    if leaf7.ebx & (1 << 24) != 0 {
        FlushInsn::Clwb
    } else if leaf7.ebx & (1 << 23) != 0 {
        FlushInsn::ClflushOpt
    } else {
        FlushInsn::Clflush
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> FlushInsn {
    FlushInsn::None
}

/// Writes back every cache line overlapping `[ptr, ptr + len)`; returns the line count.
///
/// The range must be mapped; flushing never changes memory contents.
pub(crate) fn flush_lines(ptr: *const u8, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let start = ptr as usize & !(CACHE_LINE - 1);
    let end = ptr as usize + len;
    let lines = (end - start).div_ceil(CACHE_LINE);
    let insn = flush_insn();
    for i in 0..lines {
        flush_line(insn, (start + i * CACHE_LINE) as *const u8);
    }
    lines
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn flush_line(insn: FlushInsn, line: *const u8) {
    // SAFETY: write-back instructions never change memory contents, so no Rust invariant
    // can break; `line` lies in a mapped range (the contract of `flush_lines`), so they
    // do not fault either.
    unsafe {
        match insn {
            FlushInsn::Clwb => {
                std::arch::asm!("clwb [{0}]", in(reg) line, options(nostack, preserves_flags))
            }
            FlushInsn::ClflushOpt => {
                std::arch::asm!("clflushopt [{0}]", in(reg) line, options(nostack, preserves_flags))
            }
            FlushInsn::Clflush | FlushInsn::None => {
                std::arch::asm!("clflush [{0}]", in(reg) line, options(nostack, preserves_flags))
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn flush_line(_insn: FlushInsn, _line: *const u8) {}

/// How close to the core a prefetch brings cache lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheLevel {
    /// Every level down to L1 (`prefetcht0`).
    Nearest,
    /// The outer levels only (`prefetcht2`): for a helper that stages lines for another
    /// core without filling its own L1.
    Outer,
}

/// Asks the CPU to start loading every cache line overlapping `[ptr, ptr + len)` into
/// the cache, without waiting for them.
pub(crate) fn prefetch_lines(ptr: *const u8, len: usize) {
    prefetch_range(ptr, len, CacheLevel::Nearest);
}

/// Asks the CPU to start loading every cache line overlapping `[ptr, ptr + len)` to
/// `level`, without waiting. Any address is allowed: a prefetch of memory that is not
/// mapped, or no longer is, does nothing.
pub fn prefetch_range(ptr: *const u8, len: usize, level: CacheLevel) {
    let start = ptr as usize & !(CACHE_LINE - 1);
    let end = (ptr as usize).saturating_add(len);
    for line in (start..end).step_by(CACHE_LINE) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is only a hint: it never faults, even on an unmapped address,
        // and never changes memory.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _MM_HINT_T2, _mm_prefetch};
            match level {
                CacheLevel::Nearest => _mm_prefetch::<_MM_HINT_T0>(line as *const i8),
                CacheLevel::Outer => _mm_prefetch::<_MM_HINT_T2>(line as *const i8),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (line, level);
    }
}

/// Orders all earlier flushes and stores before any later store (sfence).
#[inline]
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no operands and no memory effects beyond ordering.
    unsafe {
        std::arch::asm!("sfence", options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_covers_every_overlapping_line() {
        let buf = vec![0u8; 4 * CACHE_LINE];
        let base = buf.as_ptr();
        let aligned = (base as usize).next_multiple_of(CACHE_LINE) as *const u8;
        // SAFETY: offsets stay inside `buf`.
        let (p1, p63) = unsafe { (aligned.add(1), aligned.add(63)) };
        assert_eq!(flush_lines(aligned, 1), 1);
        assert_eq!(flush_lines(p1, 64), 2);
        assert_eq!(flush_lines(p63, 2), 2);
        assert_eq!(flush_lines(aligned, 0), 0);
        store_fence();
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn detects_an_instruction() {
        assert_ne!(flush_insn(), FlushInsn::None);
    }
}
