//! PANIC's central packet buffer (`panic_define.v`): `panic.buffer_cells` cells of
//! `panic.cell_bytes`. The scheduler writes every packet it receives into a free cell (none:
//! the packet is dropped, `buffer_full`); the cell is freed when the crossbar reads the packet
//! out, or when its PIFO was full and the packet dropped.

/// The central packet buffer's free cells.
#[derive(Debug, Default)]
pub struct PacketBuffer {
    free_cells: u32,
}

impl PacketBuffer {
    /// A buffer of `cells` free cells.
    pub fn new(cells: u32) -> PacketBuffer {
        PacketBuffer { free_cells: cells }
    }

    /// Take a cell for a packet; false when none is free.
    #[inline]
    pub fn store(&mut self) -> bool {
        if self.free_cells == 0 {
            return false;
        }
        self.free_cells -= 1;
        true
    }

    /// A packet left its cell.
    #[inline]
    pub fn release(&mut self) {
        self.free_cells += 1;
    }
}
