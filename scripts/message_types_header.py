"""Write probes/common/message_types.inc from the one message-type table
(linklab.probes.message_types): run after changing the table, then rebuild the probes.
tests/test_probes_message_types.py fails while the checked-in header is not current."""

from pathlib import Path

from linklab.probes.message_types import HEADER, cpp_header

if __name__ == "__main__":
    path = Path(__file__).resolve().parents[1] / HEADER
    path.write_text(cpp_header())
    print(f"wrote {path}")
