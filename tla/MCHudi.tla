------------------------------- MODULE MCHudi -------------------------------
(* Model-checking values for HudiTimeline; one .cfg per variant picks them. *)
EXTENDS HudiTimeline

MC_Writers1 == {1}
MC_Writers2 == {1, 2}
MC_Insert == {"insert"}
MC_Append == {"append"}
MC_Update == {"update"}
MC_AllKinds == {"insert", "append", "update"}
=============================================================================
