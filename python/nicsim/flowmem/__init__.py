"""Flow memory (seed 001, "Packets are Not Pages"): zero-copy TCP flow reassembly.

[`open_capture`] reassembles every TCP flow of a pcap/pcapng file in the Rust core: payloads stay
in one arena (standing for NIC DRAM), each flow direction is a translation table of segments.
Its views read ranges, iterate chunks, and run byte histograms, literal counts and regex
searches across segment boundaries without materialising the stream. [`reassemble`] writes
each direction's bytes and a table of flows to an output folder (`nicsim flowmem reassemble`).
"""

from nicsim.flowmem.reassemble import FlowCapture, FlowView, open_capture, reassemble

__all__ = ["FlowCapture", "FlowView", "open_capture", "reassemble"]
