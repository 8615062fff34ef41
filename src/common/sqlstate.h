// SQLSTATE codes, named as PostgreSQL's src/backend/utils/errcodes.txt names them
// (ERRCODE_UNIQUE_VIOLATION -> kUniqueViolation), grouped by class. The one table of the codes
// WattDB sends: use these names, never the five characters, in code and tests. A code not here
// yet is added here first, with PostgreSQL's name for it.
#pragma once

namespace wattdb::sqlstate {

// Class 00 - Successful Completion
inline constexpr char kSuccessfulCompletion[] = "00000";

// Class 08 - Connection Exception
inline constexpr char kConnectionFailure[] = "08006";
inline constexpr char kProtocolViolation[] = "08P01";

// Class 0A - Feature Not Supported
inline constexpr char kFeatureNotSupported[] = "0A000";

// Class 21 - Cardinality Violation
inline constexpr char kCardinalityViolation[] = "21000";

// Class 22 - Data Exception
inline constexpr char kStringDataRightTruncation[] = "22001";
inline constexpr char kNumericValueOutOfRange[] = "22003";
inline constexpr char kInvalidDatetimeFormat[] = "22007";
inline constexpr char kDatetimeFieldOverflow[] = "22008";
inline constexpr char kSubstringError[] = "22011";
inline constexpr char kDivisionByZero[] = "22012";
inline constexpr char kSequenceGeneratorLimitExceeded[] = "2200H";
inline constexpr char kInvalidRegularExpression[] = "2201B";
inline constexpr char kInvalidArgumentForLog[] = "2201E";
inline constexpr char kInvalidArgumentForPowerFunction[] = "2201F";
inline constexpr char kInvalidRowCountInLimitClause[] = "2201W";
inline constexpr char kInvalidParameterValue[] = "22023";
inline constexpr char kInvalidEscapeSequence[] = "22025";
inline constexpr char kInvalidTextRepresentation[] = "22P02";
inline constexpr char kBadCopyFileFormat[] = "22P04";

// Class 23 - Integrity Constraint Violation
inline constexpr char kNotNullViolation[] = "23502";
inline constexpr char kUniqueViolation[] = "23505";

// Class 25 - Invalid Transaction State
inline constexpr char kActiveSqlTransaction[] = "25001";
inline constexpr char kReadOnlySqlTransaction[] = "25006";
inline constexpr char kNoActiveSqlTransaction[] = "25P01";
inline constexpr char kInFailedSqlTransaction[] = "25P02";
inline constexpr char kIdleInTransactionSessionTimeout[] = "25P03";

// Class 26 - Invalid SQL Statement Name
inline constexpr char kInvalidSqlStatementName[] = "26000";

// Class 28 - Invalid Authorization Specification
inline constexpr char kInvalidAuthorizationSpecification[] = "28000";
inline constexpr char kInvalidPassword[] = "28P01";

// Class 2B - Dependent Privilege Descriptors Still Exist
inline constexpr char kDependentObjectsStillExist[] = "2BP01";

// Class 34 - Invalid Cursor Name
inline constexpr char kInvalidCursorName[] = "34000";

// Class 3D - Invalid Catalog Name
inline constexpr char kInvalidCatalogName[] = "3D000";

// Class 40 - Transaction Rollback
inline constexpr char kTransactionRollback[] = "40000";
inline constexpr char kSerializationFailure[] = "40001";
inline constexpr char kStatementCompletionUnknown[] = "40003";
inline constexpr char kDeadlockDetected[] = "40P01";

// Class 42 - Syntax Error or Access Rule Violation
inline constexpr char kInsufficientPrivilege[] = "42501";
inline constexpr char kSyntaxError[] = "42601";
inline constexpr char kInvalidName[] = "42602";
inline constexpr char kDuplicateColumn[] = "42701";
inline constexpr char kAmbiguousColumn[] = "42702";
inline constexpr char kUndefinedColumn[] = "42703";
inline constexpr char kUndefinedObject[] = "42704";
inline constexpr char kDuplicateObject[] = "42710";
inline constexpr char kDuplicateAlias[] = "42712";
inline constexpr char kGroupingError[] = "42803";
inline constexpr char kDatatypeMismatch[] = "42804";
inline constexpr char kWrongObjectType[] = "42809";
inline constexpr char kUndefinedFunction[] = "42883";
inline constexpr char kReservedName[] = "42939";
inline constexpr char kUndefinedTable[] = "42P01";
inline constexpr char kUndefinedParameter[] = "42P02";
inline constexpr char kDuplicateDatabase[] = "42P04";
inline constexpr char kDuplicatePreparedStatement[] = "42P05";
inline constexpr char kDuplicateTable[] = "42P07";
inline constexpr char kInvalidColumnReference[] = "42P10";
inline constexpr char kInvalidTableDefinition[] = "42P16";
inline constexpr char kInvalidObjectDefinition[] = "42P17";

// Class 53 - Insufficient Resources
inline constexpr char kOutOfMemory[] = "53200";
inline constexpr char kTooManyConnections[] = "53300";

// Class 54 - Program Limit Exceeded
inline constexpr char kProgramLimitExceeded[] = "54000";
inline constexpr char kStatementTooComplex[] = "54001";

// Class 55 - Object Not In Prerequisite State
inline constexpr char kObjectNotInPrerequisiteState[] = "55000";
inline constexpr char kObjectInUse[] = "55006";
inline constexpr char kLockNotAvailable[] = "55P03";

// Class 57 - Operator Intervention
inline constexpr char kQueryCanceled[] = "57014";
inline constexpr char kAdminShutdown[] = "57P01";
inline constexpr char kCannotConnectNow[] = "57P03";

// Class 58 - System Error
inline constexpr char kIoError[] = "58030";

// Class XX - Internal Error
inline constexpr char kInternalError[] = "XX000";
inline constexpr char kDataCorrupted[] = "XX001";

}  // namespace wattdb::sqlstate
