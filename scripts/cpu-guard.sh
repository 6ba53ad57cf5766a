#!/usr/bin/env bash
# The CPU tests and every shipped scene in the guarded-memory mode of the CPU backend
# (CONDSIM_CPU_GUARD=1, cpu/guarded_memory.h; .ci/run calls it): backend arrays are inaccessible
# outside launches and copies, fresh memory is NaN, and a launched functor holding a host pointer
# throws. Host code that would crash on a GPU, host pointers in kernels and reads of memory no
# kernel wrote fail here. Then every shipped scene, run for a short time in the mode, must give
# output.h5 datasets bit for bit equal to the run without it (a read of never-written memory
# would bring in a NaN). Usage: scripts/cpu-guard.sh [BUILD_DIR] [--duration S]
# (defaults: build, 0.05 s). Cost: 130 s of CPU (docs/architecture.md, "Checking the CUDA path
# without a GPU").
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build=$1; shift; fi
duration=0.05
if [ "${1:-}" = "--duration" ]; then duration=$2; shift 2; fi
# tests left out, with the reason:
# - cli.batch_kill9*, cli.batch_sigint*: three batches of 4 x 1500 steps each with timed signals;
#   every launch pays two mprotect calls in the mode (about 2.5 us), which takes them past
#   ctest's timeout. The batch path itself runs in the mode in cli.batch_same / _failure / _shards.
# - the tests listed in GUARD_SLOW below: millions of tiny launches (small scenes, many solver
#   iterations), minutes each in the mode (the second and third lines: over 45 s each on the
#   2-core CI machine, 2026-11-26, 2300 of the stage's 3560 s of CPU; the batch tests that the
#   line above names stay); the same kernels and host code run in the mode in the shorter tests
#   and the scenes.
exclude='^cli\.batch_(kill9|sigint)'
GUARD_SLOW=${GUARD_SLOW-'^(World\.StaticFrictionCreepsAtForceOverKv|FemCantilever\.TipDeflectionConvergesToEulerBernoulli|FemDynamics\.FreeFlightConservesMomentumAndDoesNotGainEnergy|CondChains\.ContactNodesInsideAChainStayExact|WorldRodContact\.CableLoopRestsOnItself|'\
'World\.RestingBoxDoesNotDriftAndCarriesItsWeight|WorldCoupling\.CableDrapesOverFemBlockAndRigidBox|Scene\.SoftGripperSceneLiftsTheCube|WorldMomentum\.FemCable|Gripper\.LiftsSoftBallAndHoldsItWithoutSlip|scripts\.gpu_session|WorldCoupling\.MeshShapedRigidBodyCarriesBoxesAndFem|ResidentStep\.GrowingContactsAllocateNothingAfterTheFirstStep|WorldFemSpin\.FreeSpinConservesMomentumAndAngularMomentum|CondStopRule\.MomentumCheckSolvesAStiffChainThatThetaAloneStopsEarly|WorldFemSpin\.GeometricStiffnessDoesNotResistRigidMotion|cli\.batch_group|RodDrape\.CableDrapesOverCylinderLikeFineSteps|WorldBatchFailure\.FailedFemEnvironmentIsFrozen|'\
'CondBodyModes\.SameFixedPointInFewerIterations|World\.BoxSlidingMatchesAnalyticLawTableI|WorldMomentum\.CableCable|Scene\.SoftMatFoldingSceneFoldsWithoutPenetration|World\.AnisotropicFrictionFollowsMaximalDissipation|WorldFemContact\.StackedCubesCarryTheWeight|Scene\.SoftBallGrippingSceneLiftsTheBall|WorldFemSpin\.FastSpinStaysBounded|WorldRigidContact\.SoftBlockCarriesThePlate)$'}
[ -n "$GUARD_SLOW" ] && exclude="$exclude|$GUARD_SLOW"
status=0
echo "== ctest -L cpu with CONDSIM_CPU_GUARD=1 (excluded: $exclude)"
(cd "$build" && CONDSIM_CPU_GUARD=1 ctest -L cpu -E "$exclude" -j"${JOBS:-2}" --timeout 300 --output-on-failure) || status=1
echo "== every shipped scene for $duration s with CONDSIM_CPU_GUARD=1 against the run without it"
OMP_NUM_THREADS=2 OUT="${OUT:-$(mktemp -d)}/guard" REUSE_OLD=0 NEW_ENV="CONDSIM_CPU_GUARD=1" \
  bash scripts/compare-scenes.sh "$build/condsim" "$build/condsim" --duration "$duration" || status=1
[ $status -eq 0 ] && echo "cpu guard: the CPU tests pass and every scene is identical in guarded memory"
exit $status
