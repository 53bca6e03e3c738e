from typing import Any

from oasr_tok._engine.piece_table import PieceTable

def feed_batch(
    table: PieceTable, rows: Any, states: list[dict[str, Any]], final: bool, one_per_stream: bool
) -> list[str]: ...
