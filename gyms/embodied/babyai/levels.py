"""BabyAI's level families and the env ids that play them: data only, no minigrid.

colbench imports this module when it starts (it is the ``babyai`` entry point of the
``colbench.env_families`` group, see :mod:`colbench.envs`), so it must stay cheap: the env
class in :mod:`colbench.gyms.embodied.babyai.env` and minigrid load only when an id is made.
"""

from __future__ import annotations

from typing import Any

#: Level family (minigrid's level class) -> the minigrid id played (its first registered one).
LEVELS: dict[str, str] = {
    "GoToRedBallGrey": "BabyAI-GoToRedBallGrey-v0",
    "GoToRedBall": "BabyAI-GoToRedBall-v0",
    "GoToRedBallNoDists": "BabyAI-GoToRedBallNoDists-v0",
    "GoToObj": "BabyAI-GoToObj-v0",
    "GoToLocal": "BabyAI-GoToLocal-v0",
    "GoTo": "BabyAI-GoTo-v0",
    "GoToImpUnlock": "BabyAI-GoToImpUnlock-v0",
    "GoToSeq": "BabyAI-GoToSeq-v0",
    "GoToRedBlueBall": "BabyAI-GoToRedBlueBall-v0",
    "GoToDoor": "BabyAI-GoToDoor-v0",
    "GoToObjDoor": "BabyAI-GoToObjDoor-v0",
    "Open": "BabyAI-Open-v0",
    "OpenRedDoor": "BabyAI-OpenRedDoor-v0",
    "OpenDoor": "BabyAI-OpenDoor-v0",
    "OpenTwoDoors": "BabyAI-OpenTwoDoors-v0",
    "OpenDoorsOrder": "BabyAI-OpenDoorsOrderN2-v0",
    "Pickup": "BabyAI-Pickup-v0",
    "UnblockPickup": "BabyAI-UnblockPickup-v0",
    "PickupLoc": "BabyAI-PickupLoc-v0",
    "PickupDist": "BabyAI-PickupDist-v0",
    "PickupAbove": "BabyAI-PickupAbove-v0",
    "PutNextLocal": "BabyAI-PutNextLocal-v0",
    "PutNext": "BabyAI-PutNextS4N1-v0",
    "Unlock": "BabyAI-Unlock-v0",
    "UnlockLocal": "BabyAI-UnlockLocal-v0",
    "KeyInBox": "BabyAI-KeyInBox-v0",
    "UnlockPickup": "BabyAI-UnlockPickup-v0",
    "BlockedUnlockPickup": "BabyAI-BlockedUnlockPickup-v0",
    "UnlockToUnlock": "BabyAI-UnlockToUnlock-v0",
    "ActionObjDoor": "BabyAI-ActionObjDoor-v0",
    "FindObj": "BabyAI-FindObjS5-v0",
    "KeyCorridor": "BabyAI-KeyCorridor-v0",
    "OneRoom": "BabyAI-OneRoomS8-v0",
    "MoveTwoAcross": "BabyAI-MoveTwoAcrossS5N2-v0",
    "Synth": "BabyAI-Synth-v0",
    "SynthLoc": "BabyAI-SynthLoc-v0",
    "SynthSeq": "BabyAI-SynthSeq-v0",
    "MiniBossLevel": "BabyAI-MiniBossLevel-v0",
    "BossLevel": "BabyAI-BossLevel-v0",
    "BossLevelNoUnlock": "BabyAI-BossLevelNoUnlock-v0",
}

_ENTRY_POINT = "colbench.gyms.embodied.babyai.env:BabyAIEnv"

#: Every BabyAI env id -> (entry point, kwargs), minigrid's way: one class, kwargs per id.
#: ``colbench/BabyAI-v0`` plays all levels; ``colbench/BabyAI-<Family>-v0`` plays one.
BABYAI_ENVS: dict[str, tuple[str, dict[str, Any]]] = {
    "colbench/BabyAI-v0": (_ENTRY_POINT, {}),
    **{f"colbench/BabyAI-{family}-v0": (_ENTRY_POINT, {"levels": (family,)})
       for family in LEVELS},
}
