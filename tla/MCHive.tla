------------------------------- MODULE MCHive -------------------------------
(* Model-checking values for HiveTable; one .cfg per variant picks them.   *)
EXTENDS HiveTable

MC_Writers1 == {1}
MC_Writers2 == {1, 2}
MC_AllKinds == {"append", "overwrite"}
MC_Appends == {"append"}
MC_Overwrites == {"overwrite"}
=============================================================================
